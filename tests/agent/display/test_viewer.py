"""The View Tensor payload (agent/display/viewer.py): exact counts, marks that survive pooling, bounds, good manners."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tensorsight.agent.display.viewer import MAX_SIDE, NAN, NEGINF, POSINF, SAMPLE_ELEMENTS, view, view_json


def test_counts_are_exact_over_the_whole_tensor_not_the_downsample() -> None:
    x = torch.rand(3_000_000) + 1.0  # no zero of its own (randn can draw an exact 0.0)
    x[[10, 20, 30]] = float("nan")
    x[99] = float("inf")
    x[100] = float("-inf")
    x[200:207] = 0.0
    payload = view(x)
    assert payload["counts"] == {"nan": 3, "posinf": 1, "neginf": 1, "zero": 7, "finite": 3_000_000 - 5}
    assert payload["line"]["points"] <= 2048
    assert sum(payload["histogram"]["counts"]) == payload["counts"]["finite"]


def test_one_nan_cell_survives_pooling_and_inf_cells_are_marked() -> None:
    x = torch.randn(2000, 3000)
    x[1234, 2345] = float("nan")
    x[5, 5] = float("inf")
    x[1999, 2999] = float("-inf")
    heat = view(x)["heatmap"]
    assert heat["rows"] <= MAX_SIDE and heat["cols"] <= MAX_SIDE
    marks = np.array(heat["marks"])
    assert (marks == NAN).sum() == 1 and marks[1234 // heat["blockRows"], 2345 // heat["blockCols"]] == NAN
    assert marks[0, 0] == POSINF and marks[-1, -1] == NEGINF
    assert heat["values"][0][0] is None


def test_line_keeps_a_spike_in_its_bucket_max() -> None:
    x = torch.zeros(1_000_000)
    x[777_777] = 50.0
    line = view(x)["line"]
    assert max(v for v in line["max"] if v is not None) == 50.0


def test_payload_of_a_1e7_tensor_is_bounded() -> None:
    assert len(view_json(torch.randn(10_000_000))) < 2_000_000
    assert len(view_json(torch.randn(4000, 2500))) < 3_000_000


def test_numpy_arrays_agree_with_torch() -> None:
    a = np.random.default_rng(0).standard_normal((300, 500))
    a[7, 9] = np.nan
    from_np, from_torch = view(a), view(torch.from_numpy(a))
    assert from_np["counts"] == from_torch["counts"]
    assert from_np["heatmap"]["marks"] == from_torch["heatmap"]["marks"]
    assert from_np["meta"]["library"] == "numpy"


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float16, torch.bfloat16, torch.complex64])
def test_dtypes_give_a_picture(dtype: torch.dtype) -> None:
    payload = view(torch.ones(8, 9).to(dtype))
    assert payload["kind"] == "heatmap" and payload["stats"]["max"] == 1.0
    json.dumps(payload, allow_nan=False)


def test_complex_shows_the_magnitude() -> None:
    assert view(torch.tensor([3 + 4j, 0j]))["stats"]["max"] == 5.0


def test_images_and_slices() -> None:
    assert view(torch.rand(3, 40, 50))["image"]["layout"] == "CHW"
    assert view(np.random.rand(40, 50, 3))["image"]["layout"] == "HWC"
    batch = view(torch.rand(20, 3, 32, 32), normalize="global")["image"]
    assert batch["shown"] == 16 and batch["images"][0]["channels"][0]["low"] == batch["images"][5]["channels"][2]["low"]
    sliced = view(torch.rand(2, 5, 6, 7), index=[1, 3])
    assert sliced["kind"] == "heatmap" and sliced["slice"] == [1, 3]


def test_meta_sparse_and_others_become_messages() -> None:
    assert "meta" in view(torch.zeros(3, device="meta"))["message"]
    assert "sparse" in view(torch.eye(3).to_sparse())["message"]
    assert view("text")["kind"] == "message"
    assert view(torch.zeros(0, 3))["kind"] == "message"


def test_a_good_guest_writes_nothing_and_builds_no_graph() -> None:
    x = torch.randn(64, 64, requires_grad=True)
    y = x * 2
    version, rng = y._version, torch.get_rng_state()
    payload = view(y)
    assert y._version == version and torch.equal(torch.get_rng_state(), rng)
    assert payload["kind"] == "heatmap" and y.grad_fn is not None and x.grad is None


def test_past_the_threshold_the_histogram_is_sampled_and_the_counts_stay_exact() -> None:
    x = torch.rand(5_000_000) + 1.0
    x[[1, 2_000_001, 4_999_999]] = float("nan")
    x[17] = float("-inf")
    x[1_000:1_010] = 0.0
    payload = view(x)
    hist = payload["histogram"]
    assert payload["counts"] == {"nan": 3, "posinf": 0, "neginf": 1, "zero": 10, "finite": 5_000_000 - 4}
    assert hist["sampled"] is True and 0 < hist["sample_size"] <= 2 * SAMPLE_ELEMENTS
    assert sum(hist["counts"]) * hist["scale"] == pytest.approx(payload["counts"]["finite"])
    assert payload["countsExact"] is True and "partial" not in payload
    assert view(x)["histogram"] == hist  # deterministic: no RNG


def test_small_tensors_bin_every_value() -> None:
    payload = view(torch.arange(100.0))
    assert "sampled" not in payload["histogram"] and sum(payload["histogram"]["counts"]) == 100


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_ragged_blocks_mark_every_kind_and_average_the_rest(library: str) -> None:
    a = np.arange(1000 * 777, dtype=np.float32).reshape(1000, 777) % 7
    a[999, 776] = np.nan  # the ragged corner block
    a[0, 776] = np.inf  # the ragged last column
    a[999, 0] = -np.inf  # the ragged last row
    a[500, 1:3] = [np.inf, -np.inf]  # both infinities: the block sum is NaN, the mark +Inf
    a[300, 300] = 3e38  # a finite block whose float32 sum overflows
    a[300, 301] = 3e38
    value = a if library == "numpy" else torch.from_numpy(a)
    heat = view(value)["heatmap"]
    marks = np.array(heat["marks"])
    br, bc = heat["blockRows"], heat["blockCols"]
    assert marks[-1, -1] == NAN and marks[0, -1] == POSINF and marks[-1, 0] == NEGINF
    assert marks[500 // br, 1 // bc] == POSINF
    assert (marks != 0).sum() == 4
    cell = heat["values"][300 // br][300 // bc]
    block = a[300 // br * br : (300 // br + 1) * br, 300 // bc * bc : (300 // bc + 1) * bc].astype(np.float64)
    assert cell == pytest.approx(block.mean())
    assert heat["values"][1][1] == pytest.approx(a[br : 2 * br, bc : 2 * bc].astype(np.float64).mean(), rel=1e-5)


@pytest.mark.parametrize("library", ["torch", "numpy"])
def test_line_buckets_with_nan_keep_the_range_of_their_finite_values(library: str) -> None:
    a = np.linspace(-1.0, 1.0, 10_001)
    a[5_000] = np.nan
    a[10_000] = np.inf  # the ragged last bucket
    value = a if library == "numpy" else torch.from_numpy(a)
    line = view(value)["line"]
    k = line["bucket"]
    i = 5_000 // k
    assert line["marks"][i] == NAN and line["marks"][-1] == POSINF and line["marks"].count(0) == line["points"] - 2
    bucket = a[i * k : (i + 1) * k]
    assert line["max"][i] == np.nanmax(bucket) and line["min"][i] == np.nanmin(bucket)


def test_an_all_nan_tensor_is_marked_everywhere() -> None:
    heat = view(torch.full((600, 600), float("nan")))["heatmap"]
    assert {m for row in heat["marks"] for m in row} == {NAN}
    assert all(v is None for row in heat["values"] for v in row)


def test_a_spent_budget_answers_the_exact_counts_as_a_partial_view() -> None:
    x = torch.randn(300, 400)
    x[1, 2] = float("nan")
    payload = view(x, budget_s=0)
    assert payload["partial"] is True and payload["partialReason"] and payload["kind"] == "message"
    assert payload["counts"]["nan"] == 1 and payload["stats"]["max"] is not None
    json.dumps(payload, allow_nan=False)
    assert json.loads(view_json(x, budget_s=0))["partial"] is True
    assert view(x, budget_s="soon")["kind"] == "message"  # type: ignore[arg-type]  # a message, never a raise


def test_an_image_batch_cut_short_by_the_budget_shows_the_images_done(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorsight.agent.display import viewer

    looks = iter([False, False, True])  # after the counts, the histogram, then the first group of images
    monkeypatch.setattr(viewer._Clock, "spent", lambda self: next(looks, True))
    payload = view(torch.rand(20, 3, 32, 32))
    assert payload["kind"] == "image" and payload["partial"] is True
    assert payload["image"]["shown"] == viewer.IMAGES_PER_POOL and payload["image"]["count"] == 20


@pytest.mark.parametrize("shape", [(100_000,), (1000, 1000)])
def test_a_picture_cut_short_keeps_its_marks_and_says_so(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tensorsight.agent.display import viewer

    x = torch.randn(*shape)
    x.view(-1)[5_000] = float("nan")
    x.view(-1)[50_000] = float("inf")
    looks = iter([False, False])  # after the counts and the histogram, the budget is gone
    monkeypatch.setattr(viewer._Clock, "spent", lambda self: next(looks, True))
    payload = view(x)
    assert payload["partial"] is True and "budget" in payload["partialReason"]
    marks = np.array(payload["line"]["marks"] if len(shape) == 1 else payload["heatmap"]["marks"]).reshape(-1)
    assert sorted(int(m) for m in marks[marks != 0]) == sorted([NAN, POSINF])
    json.dumps(payload, allow_nan=False)


def test_the_figures_come_from_the_cache_the_variables_view_shares() -> None:
    from tensorsight.agent.display import reading

    x = torch.randn(1000, 1000, requires_grad=True)
    reading.CACHE.clear()
    view(x)
    hits = reading.CACHE.hits
    view(x)
    assert reading.CACHE.hits == hits + 1
