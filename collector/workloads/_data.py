"""The synthetic augmented-image dataset of the dataloader workload (imports torch; not a workload).

A module-level class, so DataLoader workers can receive it under any multiprocessing start
method (fork copies it; spawn and forkserver pickle it).
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class AugmentedImages(Dataset):
    """uint8 images held in memory; each item is a random crop, a random flip and a normalise.

    The work per item is real CPU work done with torch ops, as a torchvision transform
    pipeline does on decoded images. ``length`` may exceed the number of stored images: items
    wrap around, so a loader can run as long as the measurement needs.
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, crop: int, length: int) -> None:
        self.images = images  # (N, 3, S, S) uint8
        self.labels = labels
        self.crop = crop
        self.length = length
        self.mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        i = index % self.images.shape[0]
        image = self.images[i]
        room = image.shape[-1] - self.crop
        top, left = (int(v) for v in torch.randint(0, room + 1, (2,)))
        out = image[:, top : top + self.crop, left : left + self.crop]
        if bool(torch.rand(()) < 0.5):
            out = out.flip(-1)
        out = out.float().div_(255.0).sub_(self.mean).div_(self.std)
        return out, self.labels[i]


def make_dataset(stored: int, size: int, crop: int, length: int, seed: int = 0) -> AugmentedImages:
    """``stored`` random uint8 images of ``size``x``size`` cropped to ``crop``, ``length`` items."""
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (stored, 3, size, size), dtype=torch.uint8, generator=g)
    labels = torch.randint(0, 10, (stored,), generator=g)
    return AugmentedImages(images, labels, crop, length)
