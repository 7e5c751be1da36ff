"""Two-layer graph convolutional network on a tiny random graph (three communities, dense adjacency).

Full-batch training with node index lists for the train, validation and test splits (disjoint slices of one
permutation), dropout between the layers, Adam with weight decay; validation as in the well-known example: eval mode,
one forward over the whole graph.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphConvolution(nn.Module):
    """output = adj @ (input @ weight) + bias"""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        stdv = 1.0 / math.sqrt(out_features)
        nn.init.uniform_(self.weight, -stdv, stdv)
        nn.init.uniform_(self.bias, -stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        return torch.mm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def random_graph(nodes=150, classes=3, nfeat=16, seed=0):
    """A stochastic block model: dense within communities, sparse across; noisy features hint at the community."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(nodes) % classes
    same = labels.view(-1, 1) == labels.view(1, -1)
    p = torch.where(same, torch.tensor(0.12), torch.tensor(0.01))
    upper = torch.triu((torch.rand(nodes, nodes, generator=generator) < p).float(), diagonal=1)
    adj = upper + upper.t() + torch.eye(nodes)
    d_inv_sqrt = adj.sum(1).pow(-0.5)
    adj = d_inv_sqrt.view(-1, 1) * adj * d_inv_sqrt.view(1, -1)
    centres = torch.randn(classes, nfeat, generator=generator)
    features = centres[labels] + 2.0 * torch.randn(nodes, nfeat, generator=generator)
    return adj, features, labels


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


def train(args, model, optimizer, features, adj, labels, idx_train, idx_val, epoch):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()

    model.eval()
    output = model(features, adj)
    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    if epoch % args.log_interval == 0:
        print(
            f"Epoch: {epoch + 1:04d} loss: {loss_train.item():.4f} acc_train: {acc_train.item():.4f} "
            f"val loss {loss_val.item():.4f} acc_val: {acc_val.item():.4f}"
        )


def test(model, features, adj, labels, idx_test):
    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    acc_test = accuracy(output[idx_test], labels[idx_test])
    print(f"Test set results: loss= {loss_test.item():.4f} accuracy= {acc_test.item():.4f}")


def main():
    parser = argparse.ArgumentParser(description="GCN on a random graph")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--log-interval", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    adj, features, labels = random_graph()
    perm = torch.randperm(len(labels), generator=torch.Generator().manual_seed(1))
    idx_train = perm[:50]
    idx_val = perm[50:90]
    idx_test = perm[90:]

    model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=int(labels.max()) + 1, dropout=args.dropout)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    model.to(device)
    features, adj, labels = features.to(device), adj.to(device), labels.to(device)
    idx_train, idx_val, idx_test = idx_train.to(device), idx_val.to(device), idx_test.to(device)

    for epoch in range(args.epochs):
        train(args, model, optimizer, features, adj, labels, idx_train, idx_val, epoch)
    test(model, features, adj, labels, idx_test)


if __name__ == "__main__":
    main()
