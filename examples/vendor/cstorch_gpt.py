"""A cerebras.pytorch program in the shape of Cerebras' gigaGPT (github.com/Cerebras/gigaGPT, train.py,
data.py, configuration.py): ClusterConfig, backend.is_cpu / backend.device, AdamW with correct_bias, a warm-up
then cosine-decay learning-rate schedule, the appliance's debug settings, a SummaryWriter, the executor's rate
tracker and a sharded data sampler. Written for the real SDK. ``--backend CPU`` takes the script's CPU path, as
gigaGPT's ``backend: "CPU"`` setting does (a quick check before a run on the system).
"""
import argparse
import logging
from pathlib import Path

import cerebras.pytorch as cstorch
import cerebras.pytorch.distributed as dist
import torch
from cerebras.pytorch.distributed import ClusterConfig

logging.basicConfig(level=logging.INFO, format="%(message)s")
logger = logging.getLogger("gpt")


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=64, width=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 64), torch.nn.GELU(), torch.nn.Linear(64, width))
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, input_ids, labels):
        h = self.embed(input_ids)
        logits = self.head(h + self.mlp(h))
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten().long())


def get_dataloader(sequence_length, batch_size):
    data = torch.arange(4000) % 64
    n = (len(data) - 1) // sequence_length
    task = dist.get_streaming_rank() if dist.is_streamer() else 0
    xs = [data[i * sequence_length:(i + 1) * sequence_length + 1] for i in range(n) if i % dist.num_streamers() == task]
    ds = [(x[:-1].int(), x[1:].int()) for x in xs]
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=True)


parser = argparse.ArgumentParser()
parser.add_argument("--backend", default="CSX", choices=["CSX", "CPU", "GPU"])
config = parser.parse_args()
torch.manual_seed(0)
cs_config = ClusterConfig(num_csx=1, mount_dirs=["/data"])
backend = cstorch.backend(config.backend, cluster_config=cs_config)
if not backend.is_cpu:
    cstorch.amp.set_half_dtype("bfloat16")
with backend.device:
    model = TinyGPT()
compiled_model = cstorch.compile(model, backend)
optimizer = cstorch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1, correct_bias=True, betas=(0.9, 0.95))
lr_scheduler = cstorch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[
    cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=0.0, end_learning_rate=3e-3, total_iters=5),
    cstorch.optim.lr_scheduler.CosineDecayLR(optimizer, initial_learning_rate=3e-3, end_learning_rate=3e-4,
                                             total_iters=35)], milestones=[5])
cstorch.backends.csx.debug.execute_crd_memory_gi = 32
out_dir = Path("model_dir")


@cstorch.trace
def training_step(batch):
    input_ids, labels = batch
    loss = compiled_model(input_ids, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
    optimizer.step()
    lr_scheduler.step()
    optimizer.zero_grad()
    return loss


from cerebras.pytorch.utils.tensorboard import SummaryWriter  # noqa: E402

writer = SummaryWriter(log_dir=out_dir.joinpath("train"))
losses = []


@cstorch.step_closure
def log_loss(loss, step):
    rate = executor.profiler.rate_tracker.rate
    losses.append(loss.item())
    if step % 10 == 0:
        logger.info(f"| Step={step}, Loss={loss.item():.5f}, Rate={rate:.2f} samples/sec")
    writer.add_scalar("loss", loss.item(), step)


dataloader = cstorch.utils.data.DataLoader(get_dataloader, 16, 8)
executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=40, checkpoint_steps=20)
for step, batch in enumerate(executor, start=1):
    loss = training_step(batch)
    log_loss(loss, step)
print(f"learning rate at the end {lr_scheduler.get_last_lr()[0]:.2e}")
print(f"backend is_cpu={backend.is_cpu}")
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
