"""A small CNN of the model zoo: convolutions lowered as im2col MatMuls (docs/import.md)."""

from torch import nn


class SmallCNN(nn.Module):
    """A strided stem on the image, two 3x3 'same' convolutions with BatchNorm and ReLU, a 1x1 projection,
    global average pooling and a classifier."""

    def __init__(self, channels: int = 64, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 4, stride=4), nn.ReLU())
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(2 * channels, classes)

    def forward(self, image):
        return self.classifier(self.pool(self.body(self.stem(image))).flatten(1))
