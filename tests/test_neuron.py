"""The Neuron family (AWS Inferentia2 ``inf2``, Trainium ``trn1``): an allow-list of supported ops, the rest on the
host with ``fallback="host"``; compile, serve and a Session that trains with plain PyTorch's numbers."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import accelkit as ak
from accelkit.errors import CompileError
from accelkit.porting import check, load_table


class Tagger(nn.Module):
    """Embedding -> LSTM -> feed-forward: the LSTM is on no Neuron operator list."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, d)
        self.rnn = nn.LSTM(d, d, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, 5))

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.ff(h)


def _ids(batch: int = 4, seq: int = 6) -> torch.Tensor:
    return torch.randint(0, 50, (batch, seq), generator=torch.Generator().manual_seed(3))


def test_the_table_is_an_allow_list_with_sources():
    table = load_table("neuron")
    assert table.supported and table.unlisted is not None and table.unlisted.severity == "error"
    assert table.listed("aten.addmm.default", "addmm") is not None  # on the torch-neuronx list
    off = table.op_rule("aten.special_erfcx.default", "special_erfcx", {})  # on no list
    assert off is not None and off.ops == ("aten.special_erfcx.default",) and off.reason == table.unlisted.reason
    assert table.op_rule("aten.view.default", "view", {}) is None  # views are never listed, never refused
    assert all(g.source.startswith(("AWS Neuron docs", "unconfirmed:", "derived:")) for g in table.supported)


@pytest.mark.parametrize("target", ["inf2", "trn1"])
def test_an_op_off_the_list_is_refused_naming_the_host_fallback(target):
    report = check(Tagger().eval(), (_ids(),), target)
    (err,) = report.errors
    assert err.op == "aten.lstm.input" and err.recipe == "unroll-rnn" and "fallback" in err.fix
    with pytest.raises(CompileError, match="(?s)aten.lstm.input.*test_neuron.py:.*fallback"):
        ak.compile(Tagger().eval(), (_ids(),), target=target)


def test_inf2_runs_the_lstm_on_the_host_and_the_rest_on_the_neuroncores():
    prog = ak.compile(Tagger().eval(), (_ids(32, 12),), target="inf2", fallback="host")
    on = {k.name: k.runs_on for k in prog.kernels}
    assert [k.ops[0] for k in prog.kernels if k.runs_on == "host"] == ["lstm"]
    assert sorted(k.extra["direction"] for k in prog.kernels if k.runs_on == "link") == ["to device", "to host"]
    rep = prog.report
    lanes = {e.lane for e in rep.events}
    assert {"host CPU", "host link", "Tensor Engine"} <= lanes
    assert rep.host_s > 0 and rep.transfer_s > 0 and rep.step_time_s > rep.host_s + rep.transfer_s
    assert sum(1 for v in on.values() if v == "device") >= 3


def test_trn1_session_with_the_lstm_on_the_host_trains_as_plain_pytorch():
    torch.manual_seed(0)
    ref = Tagger()
    model = copy.deepcopy(ref)
    ref_opt, opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, model))

    def loss_fn(logits, tags):
        return nn.functional.cross_entropy(logits.flatten(0, 1), tags.flatten())

    session = ak.Session(model, target="trn1", optimizer=opt, loss_fn=loss_fn, precision="fp32", fallback="host")
    g = torch.Generator().manual_seed(5)
    for _ in range(3):
        ids, tags = torch.randint(0, 50, (4, 6), generator=g), torch.randint(0, 5, (4, 6), generator=g)
        ref_opt.zero_grad()
        ref_loss = loss_fn(ref(ids), tags)
        ref_loss.backward()
        ref_opt.step()
        assert torch.equal(session.run(ids, labels=tags).loss, ref_loss.detach())
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters(), strict=True):
        assert torch.equal(p, q), n
    prog = session.compiled
    assert prog is not None and prog.training and prog.host_partitions == 2  # the LSTM forward and its backward
    assert {k.section for k in prog.kernels if k.runs_on == "host"} == {"fwd", "bckwd"}


def test_serve_on_neuron_chips():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=512, vocab_size=1000, use_cache=False)
    with torch.device("meta"):
        llama = LlamaForCausalLM(cfg).eval()
    one = ak.serve(llama, target="inf2", batch=4, prompt_tokens=64, output_tokens=16)
    assert one.tokens_per_s > 0 and one.ttft_s > one.tpot_s
    # the trn1's twice-as-many NeuronLinks make the same tensor-parallel decode step no slower
    two_inf2 = ak.serve(llama, target="inf2", chips=2, batch=4, prompt_tokens=64, output_tokens=16)
    two_trn1 = ak.serve(llama, target="trn1", chips=2, batch=4, prompt_tokens=64, output_tokens=16)
    assert two_trn1.tpot_s <= two_inf2.tpot_s
