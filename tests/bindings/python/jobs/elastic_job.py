# SPDX-License-Identifier: Apache-2.0
"""A rank of an elastic job (disttrainrun --elastic) through disttrain.elastic.run.

    elastic_job.py numpy VICTIMS [PAUSE]
                                  a vector "trained" by the average of each step's
                                  gradient (the step number on every rank), committed
                                  every 3 steps; the ranks in VICTIMS (comma-separated)
                                  kill themselves at step 7;
                                  PAUSE seconds between steps while the job has fewer
                                  ranks than it started with (time for a replacement of
                                  disttrainrun --max-restarts to start and join: it
                                  imports Python and torch, seconds on a loaded host)
    elastic_job.py torch VICTIMS [PAUSE]
                                  a small torch model trained on fixed data with
                                  TorchState, committed every 2 steps; same kills

Survivors print "[r] OK rank=R size=S steps=N value=..." at the end. Without the restore
to the last commit a repeated step would be counted twice; without the sync the ranks
would end different."""
import os
import signal
import sys
import time

import numpy as np

import disttrain
import disttrain.elastic as elastic

STEPS = 12
KILL_AT = 7


def die_if_victim(step, victims, first_rank):
    replacement = "DISTTRAIN_ELASTIC_JOIN" in os.environ
    if step == KILL_AT and first_rank in victims and not replacement:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_while_short(ctx, first_size, pause):
    if ctx.size() < first_size:
        time.sleep(pause)


def numpy_job(victims, pause=0.0):
    ctx = disttrain.init()
    first_rank, first_size = ctx.rank(), ctx.size()
    state = elastic.ObjectState(step=0, w=np.zeros(4, np.float64))
    resets = []
    # After the re-form: the new size, and the step the survivors went back to.
    state.register_reset_callbacks([lambda: resets.append((ctx.size(), state.step))])

    @elastic.run
    def train(state):
        while state.step < STEPS:
            die_if_victim(state.step, victims, first_rank)
            grad = np.full(4, float(state.step + 1))
            state.w += ctx.allreduce(grad, name="grad")  # the average: step + 1
            state.step += 1
            if state.step % 3 == 0:
                state.commit()
            pause_while_short(ctx, first_size, pause)
        return state.w

    w = train(state)
    expected = sum(range(1, STEPS + 1))
    if not np.all(w == expected):
        raise SystemExit(f"w is {w}, expected {expected} in every element")
    print(f"OK rank={ctx.rank()} size={ctx.size()} steps={state.step} value={w[0]:g} "
          f"resets={resets}", flush=True)


def torch_job(victims, pause=0.0):
    import torch
    import disttrain.torch as dt

    dt.init()
    ctx = disttrain.context()
    first_rank, first_size = ctx.rank(), ctx.size()
    torch.manual_seed(1 + first_rank)  # different starts: sync must make them one
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(64, 8, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    state = dt.elastic.TorchState(model=model, optimizer=opt, step=0, losses=[])

    @dt.elastic.run
    def train(state):
        while state.step < STEPS:
            die_if_victim(state.step, victims, first_rank)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            for i, p in enumerate(model.parameters()):
                dt.allreduce_(p.grad, name=f"grad.{i}")
            opt.step()
            state.losses.append(float(loss))
            state.step += 1
            if state.step % 2 == 0:
                state.commit()
            pause_while_short(ctx, first_size, pause)

    train(state)
    digest = float(sum(p.detach().double().sum() for p in model.parameters()))
    everyone = ctx.allgather_object(digest)
    if len(set(everyone)) != 1:
        raise SystemExit(f"the ranks end with different parameters: {everyone}")
    if not state.losses[-1] < state.losses[0]:
        raise SystemExit(f"the loss did not go down: {state.losses}")
    print(f"OK rank={ctx.rank()} size={ctx.size()} steps={state.step} "
          f"value={digest:.6f}", flush=True)


if __name__ == "__main__":
    victims = {int(rank) for rank in sys.argv[2].split(",")}
    {"numpy": numpy_job, "torch": torch_job}[sys.argv[1]](victims, *map(float, sys.argv[3:]))
    disttrain.shutdown()
