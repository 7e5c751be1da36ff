"""GCN node classification, bug: the split (graph_overlapping_split.py) draws the validation and test nodes from all
nodes instead of the nodes left after picking the training ones, so some training nodes are also scored.

Symptom (plain run): nothing fails and the node counts look right; about a tenth of the validation and test nodes are
training nodes, which the model fits better than unseen ones, so validation accuracy reads higher than it should
(0.83 against 0.79 for the clean script; test 0.82 against 0.81).
"""

import argparse
import time

import torch
import torch.nn.functional as F
from gcn import GCN
from graph_overlapping_split import make_sbm_graph, normalize_adjacency, split_nodes


def accuracy(logits, labels):
    return (logits.argmax(dim=1) == labels).float().mean().item()


def train(model, optimizer, features, adj, labels, train_mask):
    model.train()
    optimizer.zero_grad()
    out = model(features, adj)
    loss = F.cross_entropy(out[train_mask], labels[train_mask])
    loss.backward()
    optimizer.step()
    return loss.item(), accuracy(out[train_mask], labels[train_mask])


def evaluate(model, features, adj, labels, mask):
    model.eval()
    with torch.no_grad():
        out = model(features, adj)
        loss = F.cross_entropy(out[mask], labels[mask])
    return loss.item(), accuracy(out[mask], labels[mask])


def main():
    parser = argparse.ArgumentParser(description="GCN node classification on a synthetic SBM graph")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    features, edge_index, labels = make_sbm_graph(args.nodes, args.classes, seed=args.seed)
    adj = normalize_adjacency(edge_index, args.nodes)
    features = (features - features.mean(dim=0)) / features.std(dim=0)
    train_mask, val_mask, test_mask = split_nodes(labels, args.classes, seed=args.seed)
    print(
        f"{args.nodes} nodes, {edge_index.size(1) // 2} edges, "
        f"{int(train_mask.sum())} train / {int(val_mask.sum())} val / {int(test_mask.sum())} test nodes"
    )

    model = GCN(features.size(1), args.hidden, args.classes, dropout=args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        loss, train_acc = train(model, optimizer, features, adj, labels, train_mask)
        if epoch % 10 == 0 or epoch == 1:
            val_loss, val_acc = evaluate(model, features, adj, labels, val_mask)
            print(
                f"Epoch {epoch:03d} loss: {loss:.4f} train acc: {train_acc:.3f} "
                f"val loss {val_loss:.4f} val acc: {val_acc:.3f}"
            )
    print(f"Optimization finished in {time.time() - start:.2f}s")
    test_loss, test_acc = evaluate(model, features, adj, labels, test_mask)
    print(f"Test set results: loss {test_loss:.4f} accuracy {test_acc:.3f}")


if __name__ == "__main__":
    main()
