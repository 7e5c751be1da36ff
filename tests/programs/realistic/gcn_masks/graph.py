"""The graph of the gcn_masks example: a citation-style graph with sparse bag-of-words features, held in one object
with boolean node masks for the splits (as graph libraries hold theirs), and the sparse normalised adjacency."""

import torch


class GraphData:
    """Node features ``x`` (sparse, nodes x words), labels ``y``, edges and the split masks, as attributes."""

    def __init__(self, x, edge_index, y):
        self.x = x
        self.edge_index = edge_index
        self.y = y
        self.num_nodes = y.shape[0]

    @property
    def num_features(self):
        return self.x.shape[1]


def citation_graph(nodes=600, classes=4, words=300, generator=None):
    """Topics as communities: nodes cite mostly within their topic and use mostly their topic's words."""
    y = torch.arange(nodes) % classes
    y = y[torch.randperm(nodes, generator=generator)]
    sources = torch.randint(0, nodes, (nodes * 4,), generator=generator)
    same_topic = torch.rand(nodes * 4, generator=generator) < 0.5
    candidates = torch.randint(0, nodes, (nodes * 4,), generator=generator)
    by_topic = torch.argsort(y, stable=True)
    per_topic = nodes // classes
    in_topic = by_topic[y[sources] * per_topic + torch.randint(0, per_topic, (nodes * 4,), generator=generator)]
    targets = torch.where(same_topic, in_topic, candidates)
    edge_index = torch.stack([torch.cat([sources, targets]), torch.cat([targets, sources])])
    topic_words = (
        torch.randint(0, words // classes, (nodes, 4), generator=generator) + (y * (words // classes))[:, None]
    )
    noise_words = torch.randint(0, words, (nodes, 16), generator=generator)
    columns = torch.cat([topic_words, noise_words], dim=1).reshape(-1)
    rows = torch.arange(nodes).repeat_interleave(20)
    x = torch.sparse_coo_tensor(torch.stack([rows, columns]), torch.ones(rows.numel()), (nodes, words)).coalesce()
    row_sum = torch.sparse.sum(x, dim=1).to_dense()
    values = x.values() / row_sum[x.indices()[0]]
    x = torch.sparse_coo_tensor(x.indices(), values, x.shape).coalesce()
    return GraphData(x, edge_index, y)


def normalized_adjacency(edge_index, nodes):
    """D^-1/2 (A + I) D^-1/2 as a sparse matrix."""
    loops = torch.arange(nodes)
    rows = torch.cat([edge_index[0], loops])
    cols = torch.cat([edge_index[1], loops])
    adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), torch.ones(rows.numel()), (nodes, nodes)).coalesce()
    adj = torch.sparse_coo_tensor(adj.indices(), torch.ones_like(adj.values()), adj.shape).coalesce()
    degree = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = degree.pow(-0.5)
    i, j = adj.indices()
    return torch.sparse_coo_tensor(adj.indices(), d_inv_sqrt[i] * d_inv_sqrt[j], adj.shape).coalesce()


def index_to_mask(index, size):
    mask = torch.zeros(size, dtype=torch.bool)
    mask[index] = True
    return mask
