"""Two-tower recommender, bug: the optimizer gets only the user tower's parameters; the item tower never learns.

Symptom (plain run): the training loss creeps from 4.18 to 3.84 while the test mse rises from 4.42 to 4.63 (the clean
run reaches 2.38 and 2.88).
"""

import argparse

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from towers import TwoTower


def make_ratings(num_users=300, num_items=200, n=12000, seed=0):
    rng = np.random.default_rng(seed)
    user_factors = rng.normal(0, 1, (num_users, 4))
    item_factors = rng.normal(0, 1, (num_items, 4))
    pairs = rng.choice(num_users * num_items, size=n, replace=False)
    users, items = pairs // num_items, pairs % num_items
    ratings = (user_factors[users] * item_factors[items]).sum(1) + rng.normal(0, 0.3, n)
    return users.astype(np.int64), items.astype(np.int64), ratings.astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description="Two-tower recommender")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    torch.manual_seed(0)

    users, items, ratings = make_ratings()
    order = np.random.default_rng(1).permutation(len(ratings))
    train_rows, test_rows = order[:10000], order[10000:]
    data = [torch.from_numpy(a) for a in (users, items, ratings)]
    train_set = TensorDataset(*(a[train_rows] for a in data))
    test_set = TensorDataset(*(a[test_rows] for a in data))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=1000)

    model = TwoTower(300, 200)
    optimizer = torch.optim.Adam(model.user_tower.parameters(), lr=args.lr)  # BUG: training-logic item tower left out
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for user, item, rating in train_loader:
            optimizer.zero_grad()
            prediction = model(user, item)
            loss = F.mse_loss(prediction, rating)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(rating)
        model.eval()
        with torch.no_grad():
            test_mse = sum(F.mse_loss(model(u, i), r, reduction="sum").item() for u, i, r in test_loader)
        print(f"epoch {epoch + 1} loss: {total / len(train_set):.4f} test mse: {test_mse / len(test_set):.4f}")


if __name__ == "__main__":
    main()
