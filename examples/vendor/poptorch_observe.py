"""A PopTorch program in the shape of Graphcore's observing-tensors tutorial and feature examples
(github.com/graphcore/tutorials: tutorials/pytorch/observing_tensors/anchor_tensor_example.py, the BERT
fine-tuning's PopART options and recomputation checkpoints, feature_examples/pytorch/popdist): anchored
gradient tensors read back after training, opts._Popart settings, synthetic data for timing, popdist's
single-process path. Written for the real SDK.
"""
import popart
import popdist
import popdist.poptorch
import poptorch
import torch
import torch.nn as nn
import torchvision


class BasicLinearModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 32)
        self.fc2 = nn.Linear(32, 10)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        x = torch.relu(self.fc1(torch.flatten(x, start_dim=1)))
        x = poptorch.recomputationCheckpoint(x)
        x = self.fc2(x)
        if self.training:
            return x, self.loss(x, labels)
        return x


torch.manual_seed(0)
opts = popdist.poptorch.Options() if popdist.isPopdistEnvSet() else poptorch.Options()
opts.deviceIterations(2)
opts._Popart.set("subgraphCopyingStrategy", int(popart.SubgraphCopyingStrategy.JustInTime == "x"))
opts._Popart.set("outlineThreshold", 10.0)
for t in ("Gradient___fc1.weight", "Gradient___fc2.bias"):
    opts.anchorTensor(t, t)

transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                            torchvision.transforms.Normalize((0.5,), (0.5,))])
train_data = torchvision.datasets.MNIST("~/.torch/datasets", transform=transform, download=True, train=True)
picture = torchvision.transforms.ToPILImage()(train_data[0][0] * 0.5 + 0.5)
print(f"first image {picture.size}")
loader = poptorch.DataLoader(opts, train_data, batch_size=16, shuffle=True)

model = BasicLinearModel()
poptorch_model = poptorch.trainingModel(model, options=opts, optimizer=poptorch.optim.SGD(model.parameters(), lr=0.05))
losses = []
for step, (data, labels) in enumerate(loader):
    _, loss = poptorch_model(data, labels)
    losses.append(float(loss))
    if step == 19:
        break
print("tensor names:", poptorch_model.getTensorNames()[:2])
grad = poptorch_model.getAnchoredTensor("Gradient___fc2.bias")
print(f"anchored gradient of fc2.bias: {tuple(grad.shape)}, nonzero {bool(grad.abs().sum() > 0)}")
print(f"first loss {sum(losses[:3]) / 3:.4f} last loss {sum(losses[-3:]) / 3:.4f}")

timing = opts.clone()
timing.enableSyntheticData(True)
inference = poptorch.inferenceModel(model.eval(), options=timing)
print(f"inference output {tuple(inference(data).shape)}")
