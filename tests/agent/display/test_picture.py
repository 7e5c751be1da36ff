"""The viewer's pictures outside the editor (agent/display/picture.py, core/png.py): ``tensorsight.show(x)`` gives a
notebook a PNG whose NaN cells are in the NaN colour, a caption with the exact counts, and never raises."""

from __future__ import annotations

import numpy as np
import torch

import tensorsight
from support.png import decode_png, nan_pixels
from tensorsight.agent.display.picture import Picture, save_png, show
from tensorsight.agent.display.viewer import view
from tensorsight.core.png import encode_png


def test_png_encoder_round_trips() -> None:
    pixels = decode_png(encode_png(2, 1, [bytes([1, 2, 3, 4, 5, 6])]))
    assert pixels.tolist() == [[[1, 2, 3], [4, 5, 6]]]


def test_show_draws_nan_cells_in_their_colour_where_they_are() -> None:
    x = torch.randn(64, 64)
    x[10, 20] = float("nan")
    picture = tensorsight.show(x)
    pixels = decode_png(picture._repr_png_())
    scale = pixels.shape[0] // 64
    mask = nan_pixels(pixels)
    assert mask.sum() == scale * scale and mask[10 * scale, 20 * scale]
    assert "NaN×1" in picture.caption and "base64," in picture._repr_html_()


def test_image_batches_and_lines_are_drawn_with_their_marks() -> None:
    batch = torch.rand(5, 3, 16, 16)
    batch[2, 1, 3, 3] = float("nan")
    assert nan_pixels(decode_png(show(batch).png)).any()
    line = np.linspace(0.0, 1.0, 5000)
    line[100] = np.nan
    pixels = decode_png(show(line).png)
    assert nan_pixels(pixels).any() and pixels.shape[0] > 100


def test_what_cannot_be_drawn_is_a_caption(tmp_path) -> None:
    assert show("text").png is None and "not a tensor" in repr(show("text"))
    assert show(torch.tensor(3.0)).png is None
    assert not save_png(torch.zeros(3, device="meta"), str(tmp_path / "x.png"))
    assert save_png(torch.eye(4), str(tmp_path / "eye.png")) and (tmp_path / "eye.png").stat().st_size > 0
    assert Picture(view(torch.ones(2, 2), budget_s=0)).png is None
