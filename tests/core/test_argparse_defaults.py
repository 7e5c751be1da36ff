"""core.argparse_defaults: the add_argument line whose default an optimizer's keyword took, on real argparse code."""

import pytest

from tensorsight.core.argparse_defaults import default_written_at, learning_rate_default_at

pytestmark = pytest.mark.numpy_only  # also run under Python 3.10, 3.12 and 3.13 (scripts/test.sh)

SCRIPT = """import argparse
import torch


def main():
    parser = argparse.ArgumentParser(description="two towers")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=3.0)
    parser.add_argument("--weight-decay", dest="decay", type=float, default=1e-5)
    parser.add_argument("--learning-rate", type=float, default="3e-4")
    args = parser.parse_args()
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.decay)
    other = torch.optim.SGD(
        model.parameters(),
        lr=args.learning_rate,
    )
    fixed = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def test_the_default_the_run_used_is_found_on_its_add_argument_line():
    assert default_written_at(SCRIPT, 13, "lr", 3.0) == 8
    assert default_written_at(SCRIPT, 13, "weight_decay", 1e-5) == 9  # dest= names the attribute
    assert (
        default_written_at(SCRIPT, 15, "lr", 3e-4) == 10
    )  # dashes as underscores; a string default, a call on 3 lines


def test_a_value_that_is_not_the_default_or_not_read_from_the_arguments_has_no_line():
    assert default_written_at(SCRIPT, 13, "lr", 0.3) is None  # given on the command line: --lr 0.3
    assert default_written_at(SCRIPT, 18, "lr", 0.1) is None  # a literal at the call: that line is the one to change
    assert default_written_at(SCRIPT, 7, "lr", 3.0) is None  # no such call on that line
    assert default_written_at("def broken(:\n", 1, "lr", 3.0) is None


def test_the_attribute_names_agree_with_what_argparse_itself_sets():
    namespace = {}
    parser_part = SCRIPT.replace("import torch\n", "").split("    args =")[0] + "    return parser\n"
    exec(compile(parser_part, "script", "exec"), namespace)  # the script up to parse_args(), without torch
    parsed = vars(namespace["main"]().parse_args([]))
    assert parsed["lr"] == 3.0 and parsed["decay"] == 1e-5 and parsed["learning_rate"] == 3e-4


TRAINER_CONFIG = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--lr", type=float, default=5e-1)
parser.add_argument("--weight-decay", type=float, default=0.1)
parser.add_argument("--d-lr", "--lr-discriminator", dest="lr_d", type=float, default=2e-4)
args = parser.parse_args()
config = TrainerConfig(learning_rate=args.lr)
"""


def test_a_learning_rate_passed_through_a_config_is_found_by_its_default_value():
    assert learning_rate_default_at(TRAINER_CONFIG, 0.5) == 5
    assert learning_rate_default_at(TRAINER_CONFIG, 2e-4) == 7  # ``dest="lr_d"``: a learning rate too
    assert learning_rate_default_at(TRAINER_CONFIG, 0.1) is None  # the weight decay's default is no learning rate
    assert learning_rate_default_at(TRAINER_CONFIG, 0.25) is None  # the run used another value (``--lr 0.25``)
    both = TRAINER_CONFIG.replace("default=2e-4", "default=5e-1")
    assert learning_rate_default_at(both, 0.5) is None  # two learning rates with that default: which one is unknown
