"""A PopTorch Geometric program in the shape of Graphcore's PyTorch Geometric tutorials (github.com/graphcore/
examples, tutorials/tutorials/pytorch_geometric: 'a worked example' and 'small graph batching with packing'):
a two-layer GCN on the Cora citation graph through poptorch_geometric's DataLoader and poptorch.trainingModel
(the loss inside forward, over the training mask), its accuracy with poptorch.inferenceModel; then a graph
classifier on MUTAG's molecules, batched to a fixed size by FixedSizeDataLoader (packed, with the padding masks),
several mini-batches a call (deviceIterations). Written for the real SDK; nothing here names accelkit.

    python poptorch_geometric_gnn.py [--epochs 30] [--device-iterations 2]
"""
import argparse
import os

import poptorch
import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from poptorch_geometric import FixedSizeDataLoader, FixedSizeOptions, FixedSizeStrategy
from poptorch_geometric.dataloader import DataLoader
from torch_geometric.datasets import Planetoid, TUDataset
from torch_geometric.nn import GCNConv, global_mean_pool

parser = argparse.ArgumentParser(description="GNNs on the IPU with PopTorch Geometric")
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--device-iterations", type=int, default=2)
args = parser.parse_args()
dataset_directory = os.getenv("DATASETS_DIR", "data")

# ---- node classification: one graph, already of a fixed size
dataset = Planetoid(root=dataset_directory, name="Cora", transform=T.Compose([T.NormalizeFeatures(), T.AddSelfLoops()]))
print(f"Dataset: {dataset}, {dataset.num_node_features} features, {dataset.num_classes} classes")


class GCN(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, 16, add_self_loops=False)
        self.conv2 = GCNConv(16, out_channels, add_self_loops=False)

    def forward(self, x, edge_index, y=None, train_mask=None):
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, training=self.training)
        x = F.log_softmax(self.conv2(x, edge_index), dim=1)
        if self.training:
            return x, F.nll_loss(x, torch.where(train_mask, y, -100))
        return x


torch.manual_seed(0)
model = GCN(dataset.num_node_features, dataset.num_classes)
model.train()
poptorch_model = poptorch.trainingModel(model, poptorch.Options(), optimizer=poptorch.optim.Adam(model.parameters(), lr=0.01))
losses = []
for epoch in range(args.epochs):
    for data in DataLoader(dataset, batch_size=1):
        _, loss = poptorch_model(data.x, data.edge_index, y=data.y, train_mask=data.train_mask)
        losses.append(float(loss))
print(f"Cora: first loss {losses[0]:.4f} last loss {losses[-1]:.4f}")
poptorch_model.detachFromDevice()

model.eval()
inference = poptorch.inferenceModel(model)
data = dataset[0]
pred = inference(data.x, data.edge_index).argmax(dim=1)
accuracy = int((pred[data.test_mask] == data.y[data.test_mask]).sum()) / int(data.test_mask.sum())
print(f"Cora test accuracy: {accuracy:.2%}")

# ---- graph classification: many small graphs, packed into fixed-size mini-batches
molecules = TUDataset(root=f"{dataset_directory}/TUDataset", name="MUTAG")
torch.manual_seed(12345)
molecules = molecules.shuffle()
fixed_size_options = FixedSizeOptions(num_graphs=8, num_nodes=200, num_edges=440)
print(fixed_size_options)
opts = poptorch.Options().deviceIterations(args.device_iterations)
loader = FixedSizeDataLoader(molecules, batch_size=fixed_size_options.num_graphs, fixed_size_options=fixed_size_options,
                             fixed_size_strategy=FixedSizeStrategy.StreamPack, options=opts)


class GraphClassifier(torch.nn.Module):
    def __init__(self, in_channels, classes, graphs):
        super().__init__()
        self.conv = GCNConv(in_channels, 32, add_self_loops=False)
        self.lin = torch.nn.Linear(32, classes)
        self.graphs = graphs

    def forward(self, x, edge_index, batch, graphs_mask, y):
        x = self.conv(x, edge_index).relu()
        x = self.lin(global_mean_pool(x, batch, size=self.graphs))
        if self.training:
            return F.cross_entropy(x, torch.where(graphs_mask, y, -100))
        return x


classifier = GraphClassifier(molecules.num_features, molecules.num_classes, fixed_size_options.num_graphs)
classifier.train()
poptorch_classifier = poptorch.trainingModel(classifier, opts, optimizer=poptorch.optim.Adam(classifier.parameters(), lr=0.01))
losses = []
for epoch in range(args.epochs // 3):
    for batch in loader:
        losses.append(float(poptorch_classifier(batch.x, batch.edge_index, batch.batch, batch.graphs_mask, batch.y).mean()))
print(f"MUTAG: {len(loader)} calls an epoch, first loss {losses[0]:.4f} last loss {losses[-1]:.4f}")
