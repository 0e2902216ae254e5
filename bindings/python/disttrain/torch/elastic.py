# SPDX-License-Identifier: Apache-2.0
"""Elastic training with PyTorch: disttrain.elastic.run with a state that keeps a model,
an optimizer and any picklable values (epoch, batch, a sampler's position).

    import disttrain.torch as dt
    state = dt.elastic.TorchState(model=model, optimizer=opt, epoch=0, batch=0)

    @dt.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch in range(state.batch, steps_per_epoch):
                ...
                if state.batch % 10 == 0:
                    state.commit()
            state.batch = 0

commit() copies the model's and the optimizer's state_dict() in memory; after a re-form
every survivor goes back to its copy and then takes the new rank 0's parameters,
optimizer state and values, so the ranks continue identical.
"""
import copy

from disttrain.elastic import ObjectState, State, run  # noqa: F401 (re-exported)

from .functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters


class TorchState(ObjectState):
    """A model (torch.nn.Module), an optimizer (torch.optim.Optimizer), either may be
    None, and picklable values as attributes."""

    def __init__(self, model=None, optimizer=None, context=None, **values):
        self.model = model
        self.optimizer = optimizer
        self._saved_model = None
        self._saved_optimizer = None
        super().__init__(context, **values)

    def save(self):
        super().save()
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())

    def restore(self):
        super().restore()
        if self.model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None:
            self.optimizer.load_state_dict(self._saved_optimizer)

    def sync(self):
        ctx = self.context
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0, context=ctx)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0, context=ctx)
        values = broadcast_object(self._values(), root_rank=0, name="elastic.state",
                                  context=ctx)
        for name, value in values.items():
            setattr(self, name, value)
        self.save()
