"""A linear regression task for the training loop's tests: 512 samples of 4 features, a known linear target plus
0.1, noise drawn from the loop's generator (so a seed fixes every batch)."""

from __future__ import annotations

import torch


class ToyTask:
    metric = "val_mse"

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(512, 4, generator=g)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1

    def num_samples(self) -> int:
        return 512

    def batch(self, indices, generator):
        noise = 0.01 * torch.randn(len(indices), 1, generator=generator)
        return {"x": self.x[indices], "y": self.y[indices] + noise}

    def loss(self, model, batch):
        loss = ((model(batch["x"]) - batch["y"]) ** 2).mean()
        return loss, {}

    @torch.no_grad()
    def validate(self, model):
        return {"val_mse": float(((model(self.x) - self.y) ** 2).mean())}

    def model_config(self):
        return {"toy": True}
