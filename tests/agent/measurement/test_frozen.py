"""agent.measurement.frozen: which frozen parameters still hold their random initialisation, and the line that froze
them."""

from __future__ import annotations

import linecache

import pytest

from tensorsight.agent.measurement.frozen import freeze_line, frozen_at_start

torch = pytest.importorskip("torch")
nn = torch.nn


class Autoencoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
        self.decoder = nn.Linear(2, 6)
        self.scale = nn.Parameter(torch.ones(6), requires_grad=False)  # a fixed table of the model's own: on purpose

    def forward(self, x):
        return self.decoder(self.encoder(x)) * self.scale


def test_frozen_layer_weights_never_loaded_are_named_and_the_rest_is_not():
    model = Autoencoder()
    model.encoder.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert sorted(frozen_at_start(optimizer, [model], loaded=set()).values()) == [
        "Autoencoder.encoder.0.bias",
        "Autoencoder.encoder.0.weight",
        "Autoencoder.encoder.2.bias",
        "Autoencoder.encoder.2.weight",
    ]
    loaded = {id(p) for p in model.encoder.parameters()}  # a load_state_dict filled the encoder
    assert frozen_at_start(optimizer, [model], loaded) == {}
    trainable_only = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    assert frozen_at_start(trainable_only, [model], loaded=set()) == {}


def test_the_freeze_line_is_the_one_that_names_the_frozen_module(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "for p in model.decoder.parameters():\n"
        "    p.requires_grad_(False)  # not the one frozen\n"
        "for p in model.encoder.parameters():\n"
        "    p.requires_grad = False\n"
    )
    linecache.checkcache(str(script))
    names = ["Autoencoder.encoder.0.weight"]
    assert freeze_line([str(script)], names) == (str(script), 4)
    other = tmp_path / "other.py"
    other.write_text("def freeze(module):\n    for p in module.parameters():\n        p.requires_grad = False\n")
    assert freeze_line([str(other)], names) == (str(other), 3)  # the only freeze of the file
    assert freeze_line([str(tmp_path / "missing.py")], names) is None
