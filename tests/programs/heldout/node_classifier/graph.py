"""A synthetic citation-like graph: a stochastic block model whose communities are the classes to predict."""

import torch


def make_sbm_graph(num_nodes=1000, num_classes=5, num_features=32, p_in=0.02, p_out=0.005, noise=3.0, seed=0):
    """Return (features, edge_index, labels): node features are a noisy copy of their community's centroid."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (num_nodes,), generator=gen)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    probs = torch.where(same, torch.tensor(p_in), torch.tensor(p_out))
    upper = torch.triu(torch.bernoulli(probs, generator=gen), diagonal=1)
    src, dst = upper.nonzero(as_tuple=True)
    edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
    centroids = torch.randn(num_classes, num_features, generator=gen)
    features = centroids[labels] + noise * torch.randn(num_nodes, num_features, generator=gen)
    return features, edge_index, labels


def normalize_adjacency(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 as a sparse tensor, the renormalization trick of Kipf & Welling."""
    loops = torch.arange(num_nodes).repeat(2, 1)
    edge_index = torch.cat([edge_index, loops], dim=1)
    values = torch.ones(edge_index.size(1))
    deg = torch.zeros(num_nodes).scatter_add_(0, edge_index[0], values)
    deg_inv_sqrt = deg.pow(-0.5)
    values = deg_inv_sqrt[edge_index[0]] * values * deg_inv_sqrt[edge_index[1]]
    return torch.sparse_coo_tensor(edge_index, values, (num_nodes, num_nodes), check_invariants=True).coalesce()


def split_nodes(labels, num_classes, per_class=20, num_val=300, num_test=500, seed=0):
    """Planetoid-style split: `per_class` labelled nodes per class for training, then val and test nodes."""
    gen = torch.Generator().manual_seed(seed)
    train_idx = []
    for c in range(num_classes):
        members = (labels == c).nonzero(as_tuple=True)[0]
        train_idx.append(members[torch.randperm(len(members), generator=gen)[:per_class]])
    train_idx = torch.cat(train_idx)
    train_mask = torch.zeros(len(labels), dtype=torch.bool)
    train_mask[train_idx] = True
    rest = (~train_mask).nonzero(as_tuple=True)[0]
    rest = rest[torch.randperm(len(rest), generator=gen)]
    val_mask = torch.zeros(len(labels), dtype=torch.bool)
    val_mask[rest[:num_val]] = True
    test_mask = torch.zeros(len(labels), dtype=torch.bool)
    test_mask[rest[num_val : num_val + num_test]] = True
    return train_mask, val_mask, test_mask
