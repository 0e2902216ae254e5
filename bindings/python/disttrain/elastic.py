# SPDX-License-Identifier: Apache-2.0
"""Elastic training in Horovod's shape: a rank that dies does not end the job.

    import disttrain, disttrain.elastic as elastic
    disttrain.init()
    state = elastic.ObjectState(epoch=0, step=0, weights=w)

    @elastic.run
    def train(state):
        while state.epoch < epochs:
            ...                       # collectives; a lost peer raises PeerLostError
            state.step += 1
            if state.step % 10 == 0:
                state.commit()        # a copy in memory, nothing written to disk

    train(state)

Start it with `disttrainrun -np 4 --elastic [--min-np 2] -- python3 train.py`. When a
collective raises PeerLostError, run() restores every survivor's state to its last
commit, re-forms the job without the dead rank (Context.reform: ranks renumbered, rank
0's store kept by disttrainrun), gives every rank the new rank 0's state (sync), calls
the state's reset callbacks (to re-shard data or rescale the learning rate for the new
size) and calls the function again. Work since the last commit is done again; nothing
committed is lost. With `--max-restarts N` disttrainrun starts a replacement for each rank
that dies; its disttrain.init() waits until the job lets it in, which commit() does: it
asks whether replacements wait, and if so the ranks re-form with them and every rank,
the new ones included, goes on from the state just committed.
disttrain.torch.elastic.TorchState keeps a model and an optimizer.
"""
import copy
import functools

import disttrain

from .errors import PeerLostError


class State:
    """What a training function keeps across re-forms. Subclasses say how to save,
    restore and sync it; commit() and the callbacks are common."""

    def __init__(self, context=None):
        self._context = context
        self._reset_callbacks = []

    @property
    def context(self):
        """The context collectives run on: the one given, else the default context."""
        return self._context if self._context is not None else disttrain.context()

    def register_reset_callbacks(self, callbacks):
        """Functions called (with no argument) after each re-form, once the state is
        synced: re-shard the data for the new size, rescale the learning rate, ..."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Keeps a copy of the state in memory: what every rank goes back to when the job
        re-forms. Commit at the same step on every rank: it is also where replacements
        waiting to join are let in (one small broadcast asks whether any wait), so it may
        end the function's current call, which run() then starts again on the grown job
        with this state."""
        self.save()
        if self.context.poll_joiners() > 0:
            raise _JoinersWaiting()

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError


class ObjectState(State):
    """Picklable values as attributes (state.epoch, state.weights); sync() gives every rank
    rank 0's values."""

    def __init__(self, context=None, **values):
        super().__init__(context)
        self._names = list(values)
        for name, value in values.items():
            setattr(self, name, value)
        self._saved = None
        self.save()

    def _values(self):
        return {name: getattr(self, name) for name in self._names}

    def save(self):
        self._saved = copy.deepcopy(self._values())

    def restore(self):
        for name, value in copy.deepcopy(self._saved).items():
            setattr(self, name, value)

    def sync(self):
        values = self.context.broadcast_object(self._values(), root_rank=0,
                                               name="elastic.state")
        for name, value in values.items():
            setattr(self, name, value)
        self.save()


class _JoinersWaiting(Exception):
    """Raised by commit() to have run() re-form the job and let replacements in."""


def run(func):
    """Wraps func(state, *args, **kwargs) so that it survives lost ranks (see the module
    notes). Returns what func returns. Errors other than a lost peer propagate, as does
    a failed re-form (fewer ranks than disttrainrun --min-np, a rank the job re-formed
    without: UsageError)."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        reformed = False
        while True:
            try:
                state.sync()  # a rank may die here too
                if reformed:
                    state.on_reset()
                return func(state, *args, **kwargs)
            except PeerLostError:
                state.restore()
                state.context.reform()
                reformed = True
            except _JoinersWaiting:
                state.context.reform()  # the state is as just committed
                reformed = True

    return wrapper
