"""NIH's chest X-ray folder, made here: ``python -m accelkit.vendor.chest_xray DIR`` (Graphcore's ViT tutorial).

Graphcore's ViT fine-tuning tutorial (``tutorials/pytorch/vit_model_training``) reads NIH's ChestX-ray14 set from a
folder its README downloads (45 GB): ``chest-xray-nihcc/Data_Entry_2017_v2020.csv`` (one row per image: ``Image
Index``, ``Finding Labels`` as ``"LabelA|LabelB"`` or ``"No Finding"``, patient columns) beside ``images/*.png``.
Offline, this writes a small folder of the same layout and columns:

    python -m accelkit.vendor.chest_xray $DATASETS_DIR/chest-xray-nihcc     # in place of the README's download

- :data:`COUNT` grayscale PNGs (64x64, not NIH's 1024x1024): a dark chest-like field with bright blobs, one blob
  shape per finding, so a model can learn the labels a little; they are not radiographs.
- ``Finding Labels`` drawn from NIH's 15 label names (:data:`LABELS`, ``No Finding`` included): a fifth
  ``No Finding``, the rest two to four findings joined with ``|``, each finding in about one image in six.
  The count is set so that the tutorial's 5% validation split (50 rows) holds every label both present and absent:
  ROC AUC, the tutorial's metric, is undefined for a label that a split lacks (scikit-learn raises), as it would be
  on the real set.
- The CSV has NIH's columns (``Image Index``, ``Finding Labels``, ``Follow-up #``, ``Patient ID``, ``Patient Age``,
  ``Patient Gender``, ``View Position``, ``OriginalImage[Width``, ``Height]``, ``OriginalImagePixelSpacing[x``,
  ``y]``), patient values drawn plausibly.
"""

from __future__ import annotations

import argparse
import csv
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# NIH ChestX-ray14's label names (Wang et al., CVPR 2017; the Data_Entry CSV's "Finding Labels" values)
LABELS = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Effusion", "Emphysema", "Fibrosis", "Hernia",
          "Infiltration", "Mass", "No Finding", "Nodule", "Pleural_Thickening", "Pneumonia", "Pneumothorax")
FINDINGS = tuple(label for label in LABELS if label != "No Finding")
CSV_NAME = "Data_Entry_2017_v2020.csv"
COLUMNS = ("Image Index", "Finding Labels", "Follow-up #", "Patient ID", "Patient Age", "Patient Gender",
           "View Position", "OriginalImage[Width", "Height]", "OriginalImagePixelSpacing[x", "y]")
COUNT = 1000
SIDE = 64
FOLDER = "chest-xray-nihcc"


def _image(labels: list[str], rng: np.random.Generator, side: int) -> np.ndarray:
    """A dark field with a lighter oval (the chest) and one bright blob per finding, at a place and size fixed by
    the finding (so the labels can be learned), with noise."""
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    img = 40 + 60 * np.exp(-(((x - 0.5) / 0.32) ** 2 + ((y - 0.55) / 0.4) ** 2))
    for label in labels:
        if label == "No Finding":
            continue
        k = FINDINGS.index(label)
        cx, cy = 0.25 + 0.5 * ((k % 4) / 3), 0.25 + 0.5 * ((k // 4) / 3)
        r = 0.05 + 0.02 * (k % 3)
        img += 90 * np.exp(-(((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r)))
    img += rng.normal(0, 8, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def _labels(rng: random.Random) -> list[str]:
    if rng.random() < 0.2:
        return ["No Finding"]
    return sorted(rng.sample(FINDINGS, k=rng.choice((2, 2, 3, 3, 4))))


def write_chest_xray(folder: str | Path, count: int = COUNT, side: int = SIDE, seed: int = 0) -> Path:
    """Write ``count`` images and the CSV into ``folder`` (made if missing: ``folder/images/*.png`` and
    ``folder/Data_Entry_2017_v2020.csv``); returns the CSV's path."""
    from PIL import Image

    out = Path(folder).expanduser()
    images = out / "images"
    images.mkdir(parents=True, exist_ok=True)
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    rows = []
    patient, follow_up = 0, 0
    for i in range(count):
        if i == 0 or rng.random() < 0.6:  # a new patient, or the next follow-up of the same one
            patient, follow_up = patient + 1, 0
        else:
            follow_up += 1
        name = f"{patient:08d}_{follow_up:03d}.png"
        labels = _labels(rng)
        Image.fromarray(_image(labels, nrng, side), mode="L").save(images / name)
        rows.append([name, "|".join(labels), follow_up, patient, rng.randint(2, 90), rng.choice("MF"),
                     rng.choice(("PA", "AP")), 1024, 1024, 0.143, 0.143])
    path = out / CSV_NAME
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    (images / "metadata.jsonl").unlink(missing_ok=True)  # the tutorial writes it from the CSV: not a stale one
    return path


def missing(exc: FileNotFoundError, where: str) -> str | None:
    """The message for a script that reads NIH's CSV (or an image) from a folder without it (``where``: the
    script's line), with the command that writes accelkit's in its place; None for any other missing file."""
    missing_path = Path(str(exc.filename or ""))
    if missing_path.name != CSV_NAME:
        return None
    folder = missing_path.parent
    return (f"accelkit vendor-run: error at {where}\nthe script reads NIH's chest X-ray labels ({CSV_NAME}) from "
            f"{folder}, which does not have them: the tutorial's README downloads the set (45 GB).\n"
            f"  fix:   write accelkit's small stand-in in its place, offline ({COUNT} generated 64x64 images with NIH's "
            f"15 label names and the CSV's columns), then run the same command again: "
            f"python -m accelkit.vendor.chest_xray {folder}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m accelkit.vendor.chest_xray",
                                     description="Write a small folder in the layout of NIH's chest X-ray set "
                                                 f"({CSV_NAME} and images/*.png), in place of a tutorial's download.")
    parser.add_argument("folder", help=f"the folder the tutorial reads (its --dataset-dir, e.g. $DATASETS_DIR/{FOLDER})")
    parser.add_argument("--count", type=int, default=COUNT, help=f"how many images (default {COUNT})")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    path = write_chest_xray(args.folder, count=args.count)
    print(f"wrote {path} and {args.count} images in {path.parent / 'images'}")
    print("generated 64x64 grayscale images (bright blobs, one shape per finding), not radiographs: NIH's 15 label "
          "names and the CSV's columns, so the tutorial's reader runs unchanged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
