"""The Python client of Crucible, the self-hosted code-execution sandbox: standard library only, typed.

- `Crucible` / `Session` (and `crucible_client.aio`'s `AsyncCrucible` / `AsyncSession`): the HTTP API, typed.
- `build_code_exec` / `CodeExec`: the tools for a model, shaped like replit-code-exec's client (`from_response` runs
  an OpenAI or Anthropic reply's tool calls); `code_exec`: replit-code-exec's function.
- `code_execution_reward` (reward-kit's call shape), `code_execution_rewards`, `trl_reward_func` (TRL's trainers) and
  `verl_compute_score` (verl's custom reward function): rewards for RL.
"""

from ._http import CrucibleError, _request  # noqa: F401 (the tests' raw requests)
from .client import Crucible, Session
from .rewards import (MetricRewardOutput, RewardOutput, code_execution_reward, code_execution_rewards,
                      e2b_code_execution_reward, local_code_execution_reward, trl_reward_func, verl_compute_score)
from .tools import CodeExec, build_code_exec, code_exec

__version__ = "0.1.0"

__all__ = ["Crucible", "Session", "CrucibleError", "build_code_exec", "code_exec", "CodeExec",
           "code_execution_reward", "code_execution_rewards", "local_code_execution_reward",
           "e2b_code_execution_reward", "RewardOutput", "MetricRewardOutput", "trl_reward_func", "verl_compute_score"]
