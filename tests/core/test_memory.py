"""OOM figures and ranked remedies; the source line that keeps a graph alive (pure)."""

from tensorsight.core.memory import (
    OomFacts,
    accumulation_line,
    item_accumulation_line,
    parse_oom_message,
    rank_oom_remedies,
)

# The text PyTorch 2.x prints for a CUDA OOM (shape of the message from c10/cuda/CUDACachingAllocator.cpp).
OOM_TEXT = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.94 GiB is "
    "free. Including non-PyTorch memory, this process has 77.20 GiB memory in use. Of the allocated memory 60.22 GiB "
    "is allocated by PyTorch, and 16.36 GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)
GIB = 1024**3


def test_parse_reads_every_figure_of_the_message():
    figures = parse_oom_message(OOM_TEXT)
    assert figures["requested"] == 2 * GIB
    assert figures["capacity"] == int(79.15 * GIB)
    assert figures["free"] == int(1.94 * GIB)
    assert figures["allocated"] == int(60.22 * GIB)
    assert figures["reserved_unallocated"] == int(16.36 * GIB)
    assert parse_oom_message("some other error") == {}


def titles(facts):
    return [remedy.title for remedy in rank_oom_remedies(facts)]


def test_fragmentation_ranks_the_allocator_setting_first():
    figures = parse_oom_message(OOM_TEXT)
    ranked = titles(OomFacts(**{k: figures[k] for k in ("requested", "capacity", "allocated", "reserved_unallocated")}))
    assert "expandable_segments" in ranked[0]
    assert any("batch size" in title for title in ranked[1:3])


def test_a_retained_graph_or_growth_ranks_before_batch_size():
    ranked = titles(OomFacts(retained_graph_name="total_loss", growth_per_step=5e6, steps_completed=200))
    assert "total_loss" in ranked[0] and "item()" in ranked[0]
    assert "free what each step leaves behind" in ranked[1]
    assert ranked.index(next(t for t in ranked if "batch size" in t)) > 1


def test_eval_with_grad_ranks_no_grad_first_and_first_step_ranks_batch_size():
    assert "no_grad" in titles(OomFacts(in_eval_with_grad=True, steps_completed=3))[0]
    first = rank_oom_remedies(OomFacts(steps_completed=0))
    assert "batch size" in first[0].title and first[0].why == "the first step did not fit"


SOURCE = """\
import torch

total = 0
for step in range(10):
    loss = compute()
    total += loss


def train(loader):
    running = 0.0
    history = []
    for batch in loader:
        loss = step(batch)
        running = running + loss
        history.append(loss)
        print(running)
    return running
"""


def test_accumulation_line_finds_augmented_assignment_at_module_level():
    assert accumulation_line(SOURCE, "total", None) == 6


def test_accumulation_line_finds_self_referencing_assignment_and_append_in_a_function():
    assert accumulation_line(SOURCE, "running", 9) == 14
    assert accumulation_line(SOURCE, "history", 9, near_line=15) == 15
    assert accumulation_line(SOURCE, "loss", 9) is None  # plain rebinding keeps nothing alive
    assert accumulation_line("def broken(:\n", "x", None) is None


def test_item_accumulation_line_finds_a_dict_item_grown_from_itself_in_any_function():
    source = (
        "def update_ema(ema, model, decay):\n"
        "    for name, p in model.named_parameters():\n"
        "        ema[name] = decay * ema[name] + (1 - decay) * p\n"
        "def train(ema):\n"
        "    ema['x'] = 0\n"
        "    totals['loss'] += 1\n"
    )
    assert item_accumulation_line(source, "ema") == 3  # not the plain store on line 5
    assert item_accumulation_line(source, "totals") == 6
    assert item_accumulation_line(source, "other") is None
    assert item_accumulation_line("def (", "ema") is None
