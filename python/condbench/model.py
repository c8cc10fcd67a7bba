"""The early-exit view of a module: all that the ways of writing the conditional (condbench.variants),
the whole-model modules they deploy and the peer's checks use of a model, whoever made it: a
built-in family's twin (condbench.families) or the module of a model file (condbench.model_source).

    blocks, num_classes, row_shape   its depth, the logits' width, one input row's shape
    block(k, h)                      block k (0-based) on the state h
    head(k)                          exit head k+1 for k < blocks, else the final head
    final                            the final head
    confidence(logits)               the exit rule's score of each row: the largest softmax
                                     probability (condbench.rules, C++'s), unless the module has its own

The exit test itself, and the tolerances a result is checked with, are C++'s: condbench.rules and the
exported workload carry them; nothing here types one."""
from typing import TYPE_CHECKING, Sequence

import torch
from torch import nn

from .rules import max_softmax


class EarlyExitModel(nn.Module):
    """The view's interface; a family's twin defines blocks, num_classes, row_shape, block, its exit
    heads exit1.. and final, and takes the default head(k) and score."""

    blocks: int
    num_classes: int
    row_shape: tuple[int, ...]

    if TYPE_CHECKING:
        # Read-only to the checker: a twin holds its final head as a submodule, a model file's view
        # reads its module's through a property.
        @property
        def final(self) -> nn.Module: ...

    def block(self, k: int, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def head(self, k: int) -> nn.Module:
        """Exit head k+1 for k < blocks, else the final head: exit{k+1} and final, as the twins name them."""
        head: nn.Module = getattr(self, f"exit{k + 1}") if k < self.blocks else self.final
        return head

    def confidence(self, logits: torch.Tensor) -> torch.Tensor:
        return max_softmax(logits)


if TYPE_CHECKING:
    class ModelFileModule(nn.Module):
        """A model file's module as the protocol has it (docs/your-model.md), once condbench.model_source's
        ModelFile has checked it: stages and exits are nn.ModuleLists, final an nn.Module, confidence()
        there where ModelFile.custom_confidence says so. For the checker only: the module's class is
        the user's."""

        stages: nn.ModuleList
        exits: nn.ModuleList
        final: nn.Module

        def confidence(self, logits: torch.Tensor) -> torch.Tensor: ...


class ModelFileView(EarlyExitModel):
    """A model file's module (stages, exits, final, and perhaps confidence(): docs/your-model.md) as
    the view: its stages are the blocks, its exits the heads."""

    def __init__(self, module: "ModelFileModule", classes: int, row_shape: Sequence[int],
                 custom_confidence: bool) -> None:
        super().__init__()
        self.module = module
        self.blocks, self.num_classes, self.row_shape = len(module.stages), classes, tuple(row_shape)
        self.custom_confidence = custom_confidence

    @property
    def final(self) -> nn.Module:
        return self.module.final

    def block(self, k: int, h: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.module.stages[k](h)
        return out

    def head(self, k: int) -> nn.Module:
        return self.module.exits[k] if k < self.blocks else self.module.final

    def confidence(self, logits: torch.Tensor) -> torch.Tensor:
        return self.module.confidence(logits) if self.custom_confidence else super().confidence(logits)
