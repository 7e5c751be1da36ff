"""A tiny Vision Transformer whose forward returns class probabilities (softmax over the head)."""

import torch
import torch.nn as nn


class PatchEmbed(nn.Module):
    def __init__(self, image_size=16, patch_size=4, in_chans=1, dim=48):
        super().__init__()
        self.num_patches = (image_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)  # [B, dim, H/p, W/p]
        return x.flatten(2).transpose(1, 2)  # [B, N, dim]


class TinyViT(nn.Module):
    def __init__(
        self,
        image_size=16,
        patch_size=4,
        in_chans=1,
        num_classes=10,
        dim=48,
        depth=2,
        heads=4,
        mlp_ratio=2.0,
        dropout=0.1,
    ):
        super().__init__()
        self.patch_embed = PatchEmbed(image_size, patch_size, in_chans, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, dim))
        self.pos_drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(
            dim,
            heads,
            dim_feedforward=int(dim * mlp_ratio),
            dropout=dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def forward(self, x):
        x = self.patch_embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        x = self.encoder(self.pos_drop(x))
        x = self.norm(x[:, 0])
        scores = self.head(x).softmax(dim=-1)  # BUG: training-logic probabilities, CrossEntropyLoss wants logits
        return scores.view(scores.shape[0], -1)
