"""A two-layer GCN for node classification on a citation-style graph with sparse features and boolean split masks.

As in the usual semi-supervised setting: a few labelled nodes per class for training (data.train_mask), a validation
mask of the next nodes of a random order, and every remaining node for testing; sparse matrix products for both the
features and the normalised adjacency; full-batch Adam with weight decay and dropout.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from graph import citation_graph, index_to_mask, normalized_adjacency


class GCN(nn.Module):
    def __init__(self, in_channels, hidden, classes, dropout=0.5):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, hidden)
        self.lin2 = nn.Linear(hidden, classes)
        self.dropout = dropout

    def forward(self, x, adj):
        h = torch.sparse.mm(x, self.lin1.weight.t()) + self.lin1.bias
        h = F.relu(torch.sparse.mm(adj, h))
        h = F.dropout(h, p=self.dropout, training=self.training)
        return torch.sparse.mm(adj, self.lin2(h))


def split_masks(data, train_per_class, num_val, generator):
    """train_per_class labelled nodes of each class, then num_val validation nodes, the rest for testing."""
    order = torch.randperm(data.num_nodes, generator=generator)
    classes = int(data.y.max()) + 1
    train_index = torch.cat([order[data.y[order] == c][:train_per_class] for c in range(classes)])
    rest = order[~torch.isin(order, train_index)]
    data.train_mask = index_to_mask(train_index, data.num_nodes)
    data.val_mask = index_to_mask(rest[:num_val], data.num_nodes)
    data.test_mask = ~(data.train_mask | data.val_mask)


def train(model, optimizer, data, adj):
    model.train()
    optimizer.zero_grad()
    out = model(data.x, adj)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def test(model, data, adj):
    model.eval()
    out = model(data.x, adj)
    pred = out.argmax(dim=-1)
    accs = []
    for mask in (data.train_mask, data.val_mask, data.test_mask):
        accs.append(int((pred[mask] == data.y[mask]).sum()) / int(mask.sum()))
    return accs, float(F.cross_entropy(out[data.test_mask], data.y[data.test_mask]))


def main():
    parser = argparse.ArgumentParser(description="GCN with boolean split masks")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--train-per-class", type=int, default=20)
    parser.add_argument("--num-val", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    data = citation_graph(generator=generator)
    split_masks(data, args.train_per_class, args.num_val, generator)
    adj = normalized_adjacency(data.edge_index, data.num_nodes)

    model = GCN(data.num_features, args.hidden, int(data.y.max()) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    for epoch in range(1, args.epochs + 1):
        loss = train(model, optimizer, data, adj)
        if epoch % 10 == 0:
            (train_acc, val_acc, test_acc), _ = test(model, data, adj)
            accuracies = f"train: {train_acc:.3f}, val: {val_acc:.3f}, test: {test_acc:.3f}"
            print(f"Epoch: {epoch:03d}, loss: {loss:.4f}, {accuracies}")
    _, test_loss = test(model, data, adj)
    print(f"Test set results: loss= {test_loss:.4f}")


if __name__ == "__main__":
    main()
