"""The two-tower recommender: a user tower and an item tower (embedding + MLP) whose dot product predicts a rating."""

import torch.nn as nn


class Tower(nn.Module):
    def __init__(self, count, dim=16):
        super().__init__()
        self.embedding = nn.Embedding(count, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, ids):
        return self.mlp(self.embedding(ids))


class TwoTower(nn.Module):
    def __init__(self, num_users, num_items, dim=16):
        super().__init__()
        self.user_tower = Tower(num_users, dim)
        self.item_tower = Tower(num_items, dim)

    def forward(self, users, items):
        return (self.user_tower(users) * self.item_tower(items)).sum(dim=1)
