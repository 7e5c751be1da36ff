"""The Dataset of the custom_dataset example: fixed-length windows of a multichannel sensor recording, one activity
label per window, and the per-class counts a weighted loss uses."""

import torch
from torch.utils.data import Dataset


def record_activities(windows, channels, length, classes, generator):
    """A synthetic recording: each activity is a sine pattern of its own frequency per channel, plus sensor noise."""
    labels = torch.randint(0, classes, (windows,), generator=generator)
    time = torch.linspace(0, 1, length)
    frequency = 1.0 + torch.arange(classes * channels, dtype=torch.float32).view(classes, channels) % 5
    phase = torch.rand(windows, channels, 1, generator=generator) * 0.5
    signal = torch.sin(2 * torch.pi * (frequency[labels].unsqueeze(-1) * time + phase))
    return signal + 0.8 * torch.randn(windows, channels, length, generator=generator), labels


class ActivityWindows(Dataset):
    """The windows whose positions in the recording are ``positions``."""

    def __init__(self, signal, activity, positions, classes):
        self.class_counts = torch.bincount(activity[positions], minlength=classes).float()
        self._records = signal[positions].clone()
        self._activity = activity[positions].clone()

    def __len__(self):
        return len(self._records)

    def __getitem__(self, index):
        return self._records[index], self._activity[index]

    def class_weights(self):
        return self.class_counts.sum() / (len(self.class_counts) * self.class_counts.clamp(min=1))
