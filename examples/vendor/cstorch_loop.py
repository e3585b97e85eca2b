"""A training script in the shape of Cerebras' cerebras.pytorch ("cstorch") loop (docs.cerebras.net,
"Writing a custom training loop"): backend, compile, optim, a @trace step, a @step_closure that prints, a
@checkpoint_closure that saves with cstorch.save, utils.data.DataLoader(input_fn, ...) and DataExecutor
with num_steps / checkpoint_steps. Written for the real SDK; nothing here names accelkit.

    python cstorch_loop.py [--int32-labels]     (int32 labels, as Cerebras' data pipelines make them for the system)
"""
import sys

import cerebras.pytorch as cstorch
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)


def input_fn(batch_size: int, label_dtype: torch.dtype):
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(4, 16, generator=g) * 1.5
    labels = torch.randint(0, 4, (1024,), generator=g)
    features = centers[labels] + torch.randn(1024, 16, generator=g)
    dataset = torch.utils.data.TensorDataset(features, labels.to(label_dtype))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)


torch.manual_seed(0)
backend = cstorch.backend("CSX", artifact_dir="cerebras_artifacts", compile_dir="/tmp/compile_dir")
model = Classifier()
compiled_model = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


@cstorch.trace
def training_step(inputs, targets):
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


losses = []


@cstorch.step_closure
def record_loss(loss, step):
    losses.append(loss.item())
    if step % 20 == 0:
        print(f"step {step}: loss {loss.item():.4f}")


saved = []


@cstorch.checkpoint_closure
def save_checkpoint(step):
    path = f"checkpoints/checkpoint_{step}.mdl"
    cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)
    saved.append(path)


label_dtype = torch.int32 if "--int32-labels" in sys.argv else torch.int64
train_dataloader = cstorch.utils.data.DataLoader(input_fn, 32, label_dtype)
executor = cstorch.utils.data.DataExecutor(train_dataloader, num_steps=60, checkpoint_steps=25)
for step, (inputs, targets) in enumerate(executor, start=1):
    loss = training_step(inputs, targets)
    record_loss(loss, step)
    save_checkpoint(step)

state = cstorch.load(saved[-1])
print(f"checkpoints {saved}; last holds step {state['step']}")
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
