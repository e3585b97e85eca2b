"""Helpers in the shape of GroqFlow's ``demo_helpers`` package (github.com/groq/groqflow, demo_helpers/): a
package of its own that the proof points import once it is on the path (``pip install -e demo_helpers``), not a
module beside the script. It imports what those helpers import at the top (Hugging Face ``datasets`` with its
``utils``, ``torchvision``'s ops and transforms) and reads the SST test split. Written for the real packages.
"""
import numpy as np
import torch
import torchvision.transforms as T  # noqa: F401 - imported at the top, as the helpers do
from datasets import load_dataset
from datasets.utils import DownloadConfig
from datasets.utils.file_utils import cached_path  # noqa: F401
from torchvision.ops import box_convert, nms


def sst_inputs(tokenizer, max_seq_length, count):
    """The first ``count`` SST test sentences as model inputs (padded ids, mask) and 0/1 labels."""
    data = load_dataset("sst", split="test", download_config=DownloadConfig(cache_dir="datasets"))
    x, y = [], []
    for sentence, label in zip(data["sentence"][:count], data["label"][:count]):
        ids = tokenizer.encode(sentence, add_special_tokens=True)[:max_seq_length]
        ids = torch.tensor([ids + [0] * (max_seq_length - len(ids))])
        x.append({"input_ids": ids, "attention_mask": ids != 0})
        y.append(int(label > 0.5))
    return x, np.array(y)


def keep_boxes(boxes_cxcywh, scores, iou=0.5):
    """A detector's post-processing: centre-size boxes to corners, then non-maximum suppression."""
    return nms(box_convert(boxes_cxcywh, "cxcywh", "xyxy"), scores, iou)
