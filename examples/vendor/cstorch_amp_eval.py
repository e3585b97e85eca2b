"""A training-then-evaluation script in the shape of Cerebras' cerebras.pytorch loops (docs.cerebras.net, "Writing
a custom training loop" and its evaluation loop): float16 mixed precision with cstorch.amp.set_half_dtype,
dynamic loss scaling through cstorch.amp.GradScaler and cstorch.amp.optimizer_step (with gradient clipping), a
checkpoint holding the scaler's state, then an eval step under torch.no_grad() that feeds
cstorch.metrics.AccuracyMetric. Written for the real SDK; nothing here names accelkit.
"""
import cerebras.pytorch as cstorch
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)


def input_fn(batch_size: int, train: bool):
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(4, 16, generator=g) * 1.5
    g.manual_seed(1 if train else 2)  # the same classes, other samples for evaluation
    labels = torch.randint(0, 4, (512,), generator=g)
    features = centers[labels] + torch.randn(512, 16, generator=g)
    dataset = torch.utils.data.TensorDataset(features, labels)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=train, drop_last=True)


torch.manual_seed(0)
cstorch.amp.set_half_dtype(torch.float16)
backend = cstorch.backend("CSX")
model = Classifier()
compiled_model = cstorch.compile(model, backend)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
grad_scaler = cstorch.amp.GradScaler(loss_scale="dynamic")
loss_fn = nn.CrossEntropyLoss()


@cstorch.trace
def training_step(inputs, targets):
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, targets)
    cstorch.amp.optimizer_step(loss, optimizer, grad_scaler, max_gradient_norm=1.0)
    return loss


losses = []


@cstorch.step_closure
def record_loss(loss):
    losses.append(loss.item())


@cstorch.checkpoint_closure
def save_checkpoint(step):
    cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "grad_scaler": grad_scaler.state_dict(), "global_step": step}, f"checkpoint_{step}.mdl")


executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn, 32, True), num_steps=40,
                                           checkpoint_steps=40)
for step, (inputs, targets) in enumerate(executor, start=1):
    loss = training_step(inputs, targets)
    record_loss(loss)
    save_checkpoint(step)
print(f"first loss {sum(losses[:4]) / 4:.4f} last loss {sum(losses[-4:]) / 4:.4f}")
state = cstorch.load("checkpoint_40.mdl")
print(f"loss scale {state['grad_scaler']['loss_scale']:g} after {state['global_step']} steps")

accuracy = cstorch.metrics.AccuracyMetric("accuracy")


@cstorch.trace
@torch.no_grad()
def eval_step(inputs, targets):
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, targets)
    accuracy(labels=targets.clone(), predictions=outputs.argmax(-1).int())
    return loss


compiled_model.eval()
for inputs, targets in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn, 64, False)):
    eval_step(inputs, targets)
print(f"eval accuracy {float(accuracy):.3f} over {accuracy.num_updates} steps")
