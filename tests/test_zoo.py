"""ak.zoo and accelkit.data: every entry builds, runs, captures and trains to its goal; the data is deterministic."""

from __future__ import annotations

import math
import time

import pytest
import torch
from torch import nn

import accelkit as ak
import accelkit.zoo  # noqa: F401  (makes ak.zoo available)
from accelkit import data
from accelkit.errors import UnknownNameError

NAMES = ["bert_small", "braggnn", "ffn_logreg", "gpt_small", "unet2d"]


def test_names_and_unknown_name():
    assert ak.zoo.names() == NAMES
    with pytest.raises(UnknownNameError) as info:
        ak.zoo.get("resnet9000")
    assert all(n in str(info.value) for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_entry_builds_runs_and_captures(name):
    entry = ak.zoo.get(name)
    assert entry.description and entry.task and entry.source
    assert "held-out" in str(entry.quality_goal)
    assert isinstance(entry.model, nn.Module) and entry.num_parameters > 0
    assert isinstance(entry.loss_fn, nn.Module)
    assert isinstance(entry.example_inputs, tuple) and entry.example_inputs
    assert isinstance(entry.dataset, torch.utils.data.Dataset) and len(entry.dataset) > len(entry.heldout) > 0
    with torch.no_grad():
        out = entry.model(*entry.example_inputs)
    assert out is not None
    graph = ak.capture(entry.model, entry.example_inputs)
    assert graph.nodes and graph.total_flops > 0
    assert name in entry.summary()


def test_ffn_logreg_computes_its_loss_inside_forward():
    entry = ak.zoo.get("ffn_logreg")
    x, y = entry.example_inputs
    loss, logits = entry.model(x, y)
    assert logits.shape == (len(x), 10) and loss.ndim == 0
    assert torch.allclose(loss, nn.functional.cross_entropy(logits, y))
    assert all(m.bias is None for m in entry.model.modules() if isinstance(m, nn.Linear))  # as in the tutorial


def test_models_are_fresh_seeded_and_leave_global_rng_alone():
    state = torch.get_rng_state()
    a, b, c = ak.zoo.get("braggnn").model, ak.zoo.get("braggnn").model, ak.zoo.get("braggnn", seed=1).model
    assert torch.equal(state, torch.get_rng_state())
    assert a is not b
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert not torch.equal(a.conv1.weight, c.conv1.weight)


def test_braggnn_has_the_published_shape():
    model = ak.zoo.get("braggnn").model
    assert [m.out_channels for m in model.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)] \
        == [64, 32, 8]
    assert [m.out_features for m in model.dense if isinstance(m, nn.Linear)] == [64, 32, 16, 8, 2]
    assert model(torch.rand(3, 1, 11, 11)).shape == (3, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_trains_to_its_stated_quality(name, record_property):
    entry = ak.zoo.get(name)
    before = entry.metric(entry.model, entry.heldout)
    t0 = time.perf_counter()
    result = entry.train()
    record_property("train_seconds", round(time.perf_counter() - t0, 1))
    assert result["goal_met"], f"{name}: {result['metric_name']} {result['metric']:.3f}, goal {result['goal']}"
    assert not entry.quality_goal.met(before)  # the goal is not met by chance, untrained
    losses = result["losses"]
    assert len(losses) == entry.recipe.steps and sum(losses[-10:]) < sum(losses[:10])
    assert not entry.model.training  # left in eval mode, ready to capture or compile


def test_training_is_reproducible():
    a, b = ak.zoo.get("ffn_logreg"), ak.zoo.get("ffn_logreg")
    ra, rb = a.train(steps=20), b.train(steps=20)
    assert ra["losses"] == rb["losses"] and ra["metric"] == rb["metric"]


def test_training_restores_the_thread_setting():
    before = torch.get_num_threads()
    entry = ak.zoo.get("bert_small")
    assert entry.recipe.threads == 1
    entry.train(steps=2)
    assert torch.get_num_threads() == before


# ---- the datasets ---------------------------------------------------------------------------
def _same(x: data.Samples, y: data.Samples) -> bool:
    return x.fields == y.fields and all(torch.equal(x.tensors[k], y.tensors[k]) for k in x.fields)


@pytest.mark.parametrize(("make", "shapes"), [
    (lambda seed: data.digits(100, seed), {"x": (100, 64), "y": (100,)}),
    (lambda seed: data.bragg_peaks(100, seed), {"x": (100, 1, 11, 11), "y": (100, 2)}),
    (lambda seed: data.shapes(50, seed), {"x": (50, 1, 32, 32), "mask": (50, 32, 32)}),
])
def test_generators_are_deterministic_and_have_documented_shapes(make, shapes):
    a, b, c = make(0), make(0), make(1)
    assert _same(a, b) and not _same(a, c)
    assert {k: tuple(t.shape) for k, t in a.tensors.items()} == shapes
    assert len(a) == next(iter(shapes.values()))[0] and len(a[0]) == len(shapes)


def test_digits_from_scikit_learn():
    # scikit-learn is a dependency: it ships the UCI digits inside its package (no download)
    d = data.digits(500, 0, source="sklearn")
    assert d.x.shape == (500, 64) and 0 <= d.x.min() and d.x.max() <= 1


def test_dataset_value_ranges():
    d = data.digits(200, 0)
    assert d.y.dtype == torch.int64 and set(d.y.tolist()) == set(range(10))
    assert 0 <= d.x.min() and d.x.max() <= 1 and d.x.max() > 0.9  # counts / 16
    b = data.bragg_peaks(64, 0)
    assert 0 <= b.x.min() and b.x.max() <= 1 and ((b.y > 0) & (b.y < 1)).all()
    assert torch.allclose(b.y.double() * 10, b.extras["centre_px"], atol=1e-5)  # label = centre / (size - 1)
    s = data.shapes(64, 0)
    assert s.mask.dtype == torch.int64 and set(s.mask.unique().tolist()) == {0, 1, 2, 3}


def test_samples_split_and_batch():
    d = data.bragg_peaks(10, 0)
    train, held = d.split(3)
    assert (len(train), len(held)) == (7, 3)
    assert torch.equal(held.x, d.x[7:]) and torch.equal(held.extras["centre_px"], d.extras["centre_px"][7:])
    x, y = d.batch(torch.tensor([2, 5]))
    assert torch.equal(x, d.x[[2, 5]]) and torch.equal(y, d.y[[2, 5]])


def test_pseudo_voigt_peaks_at_its_centre():
    """Physics check: for the generator's own random parameters the profile's maximum is the stated centre."""
    ds = data.bragg_peaks(32, 3)
    step = 0.01
    fine = torch.arange(0.0, 10.0 + step / 2, step, dtype=torch.float64)
    yy, xx = torch.meshgrid(fine, fine, indexing="ij")
    e = ds.extras
    for i in range(len(ds)):
        prof = data.pseudo_voigt(xx, yy, e["centre_px"][i, 0], e["centre_px"][i, 1],
                                 sigma_x=e["sigma"][i, 0], sigma_y=e["sigma"][i, 1],
                                 gamma_x=e["gamma"][i, 0], gamma_y=e["gamma"][i, 1], eta=e["eta"][i],
                                 theta=e["theta"][i])
        top = int(prof.argmax())
        peak = torch.stack([fine[top % len(fine)], fine[top // len(fine)]])
        assert torch.allclose(peak, e["centre_px"][i], atol=step), i
        assert float(prof.max()) == pytest.approx(1.0, abs=1e-3)


def test_pseudo_voigt_widths_are_the_textbook_ones():
    x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)
    # a pure Lorentzian is at half maximum one gamma from the centre
    lor = data.pseudo_voigt(x, zero, 0.0, 0.0, sigma_x=1.0, sigma_y=1.0, gamma_x=1.0, gamma_y=1.0, eta=1.0)
    assert lor[1] == pytest.approx(0.5)
    # a pure Gaussian is at half maximum sigma * sqrt(2 ln 2) from the centre
    hwhm = math.sqrt(2 * math.log(2))
    gau = data.pseudo_voigt(torch.tensor([hwhm], dtype=torch.float64), torch.zeros(1, dtype=torch.float64), 0.0, 0.0,
                            sigma_x=1.0, sigma_y=1.0, gamma_x=1.0, gamma_y=1.0, eta=0.0)
    assert float(gau) == pytest.approx(0.5)


def test_bright_isolated_peaks_centroid_near_the_label():
    """The noisy patches still carry the centre: a thresholded centroid of bright, lone peaks finds it."""
    from accelkit.zoo.braggnn import centroid_error_px

    ds = data.bragg_peaks(512, 0)
    keep = (ds.extras["amplitude"] > 1000) & (ds.extras["neighbour_amplitude"] == 0)
    assert keep.sum() > 50 and centroid_error_px(ds.subset(keep.nonzero()[:, 0])) < 0.15
    assert centroid_error_px(ds) > centroid_error_px(ds.subset(keep.nonzero()[:, 0]))  # neighbours and faint peaks


def test_corpus_is_original_plain_text_of_the_documented_size():
    topics = data.corpus_topics()
    assert sorted(topics) == ["hardware", "nature", "science", "software"]
    text = data.corpus_text()
    assert 20_000 <= len(text.encode()) <= 50_000 and text.isascii()


def test_text_datasets_are_deterministic():
    train, held = data.byte_windows(32)
    assert train.ids.shape[1] == 32 and torch.equal(train.ids[:, 1:], train.targets[:, :-1])
    assert len(held) > 10 and held.ids.max() < 256
    a, b, c = data.topic_sentences(0), data.topic_sentences(0), data.topic_sentences(1)
    assert _same(a[0], b[0]) and _same(a[1], b[1]) and not _same(a[0], c[0])
    tr, he, vocab = a
    assert tr.ids.shape[1] == 40 and set(tr.y.tolist()) == set(he.y.tolist()) == {0, 1, 2, 3}
    assert vocab.tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert (tr.ids[:, 0] == vocab.index["[CLS]"]).all() and torch.equal(tr.attention_mask.bool(), tr.ids != 0)

