"""Rewards for RL: reward-kit's call shape, and adapters for TRL and verl."""

import json
import os

from ._http import _request


def _endpoint(url, token):
    return (url or os.environ.get("CRUCIBLE_URL") or "http://127.0.0.1:8080").rstrip("/"), \
        token if token is not None else os.environ.get("CRUCIBLE_TOKEN")


class MetricRewardOutput:
    """One metric of a reward: `score` (0..1) and `reason`, as reward-kit's MetricRewardOutput."""

    def __init__(self, score, reason=""):
        self.score = score
        self.reason = reason

    def __repr__(self):
        return f"MetricRewardOutput(score={self.score!r}, reason={self.reason!r})"


class RewardOutput:
    """A reward: `score` (0..1) and `metrics` {name: MetricRewardOutput}, as reward-kit's RewardOutput."""

    def __init__(self, score, metrics):
        self.score = score
        self.metrics = metrics

    @classmethod
    def _of(cls, answer):
        metrics = {name: MetricRewardOutput(m.get("score", 0.0), m.get("reason", ""))
                   for name, m in (answer.get("metrics") or {}).items()}
        return cls(answer.get("score", 0.0), metrics)

    def __repr__(self):
        return f"RewardOutput(score={self.score!r}, metrics={self.metrics!r})"


def _reward_body(messages, expected_output=None, original_messages=None, language="python", timeout=30,
                 test_cases=None, memory_mb=None):
    body = {"messages": messages, "language": language, "timeout_ms": int(timeout * 1000)}
    if expected_output is not None:
        body["expected_output"] = str(expected_output)
    if original_messages is not None:
        body["original_messages"] = original_messages
    if test_cases is not None:
        body["test_cases"] = test_cases
    if memory_mb is not None:
        body["memory_mb"] = memory_mb
    return body


def code_execution_reward(messages, expected_output=None, original_messages=None, language="python", timeout=30,
                          url=None, token=None, test_cases=None, memory_mb=None, **kwargs):
    """Scores the code of the last assistant message by running it in Crucible's sandbox.

    The call shape of reward-kit's local_code_execution_reward / e2b_code_execution_reward (extra keyword arguments
    such as api_key are accepted and ignored), so their examples run by changing the import line. `timeout` is in
    seconds. The expected output is `expected_output`, else what the prompt states ("Expected output: 15 (for
    [1,2,3,4,5])" is 15); with `test_cases` ([{"input", "expected_output"}]) the score is the pass rate. `url` and
    `token` default to $CRUCIBLE_URL (else http://127.0.0.1:8080) and $CRUCIBLE_TOKEN.

    Returns a RewardOutput: `.score`, `.metrics[name].score` and `.reason` (extracted_code, expected_output,
    execution_result, output_match, ...). Raises CrucibleError when the server refuses the request.
    """
    url, token = _endpoint(url, token)
    body = _reward_body(messages, expected_output, original_messages, language, timeout, test_cases, memory_mb)
    return RewardOutput._of(_request(f"{url}/v1/reward", token, "POST", body, timeout=timeout + 60))


local_code_execution_reward = code_execution_reward
e2b_code_execution_reward = code_execution_reward


def code_execution_rewards(items, url=None, token=None, timeout=30):
    """Scores many at once (POST /v1/reward/batch, run in parallel on the server): `items` are dicts of
    code_execution_reward's keyword arguments. Returns a list of RewardOutput in the same order."""
    url, token = _endpoint(url, token)
    bodies = [_reward_body(**{"timeout": timeout, **item}) for item in items]
    answer = _request(f"{url}/v1/reward/batch", token, "POST", {"items": bodies},
                      timeout=timeout * max(1, len(bodies)) + 60)
    return [RewardOutput._of(result) for result in answer["results"]]


def _as_messages(completion):
    """A TRL completion as messages: a string is one assistant message; a conversational one is a message list."""
    if isinstance(completion, str):
        return [{"role": "assistant", "content": completion}]
    return list(completion)


def trl_reward_func(url=None, token=None, language="python", timeout=30):
    """A reward function for TRL's trainers (GRPOTrainer(reward_funcs=[...])).

    TRL calls it as reward_func(completions, **kwargs) with the dataset's columns as keyword lists aligned with the
    completions: `prompts` (a string or a message list each), and optionally `expected_output` and `test_cases`.
    It returns one float per completion, scored in one batch request.
    """

    def reward_func(completions, prompts=None, expected_output=None, test_cases=None, **kwargs):
        items = []
        for i, completion in enumerate(completions):
            messages = _as_messages(completion)
            item = {"language": language, "messages": messages}
            if prompts is not None:
                prompt = prompts[i]
                prompt_messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
                item["original_messages"] = prompt_messages + messages
            if expected_output is not None and expected_output[i] is not None:
                item["expected_output"] = expected_output[i]
            if test_cases is not None and test_cases[i] is not None:
                item["test_cases"] = test_cases[i]
            items.append(item)
        return [r.score for r in code_execution_rewards(items, url, token, timeout)]

    reward_func.__name__ = "crucible_code_execution"
    return reward_func


def verl_compute_score(data_source, solution_str, ground_truth, extra_info=None, url=None, token=None,
                       language=None, timeout=30):
    """verl's custom reward function.

    Set custom_reward_function.path to the path of crucible_client/rewards.py and its name to verl_compute_score.

    verl calls compute_score(data_source, solution_str, ground_truth, extra_info). `ground_truth` is the expected
    output, or test cases as verl's code datasets keep them ({"inputs": [...], "outputs": [...]}, as a dict or its
    JSON). The language is extra_info["language"], else `language`, else python. Returns the score as a float.
    """
    truth = ground_truth
    if isinstance(truth, (bytes, bytearray)):
        truth = truth.decode("utf-8")
    if isinstance(truth, str) and truth.lstrip().startswith("{"):
        try:
            truth = json.loads(truth)
        except ValueError:
            pass
    lang = (extra_info or {}).get("language") or language or "python"
    messages = [{"role": "assistant", "content": solution_str}]
    if isinstance(truth, dict) and "inputs" in truth and "outputs" in truth:
        cases = [{"input": i if isinstance(i, str) else json.dumps(i),
                  "expected_output": o if isinstance(o, str) else json.dumps(o)}
                 for i, o in zip(truth["inputs"], truth["outputs"])]
        return code_execution_reward(messages, language=lang, timeout=timeout, url=url, token=token,
                                     test_cases=cases).score
    return code_execution_reward(messages, expected_output=None if truth is None else str(truth), language=lang,
                                 timeout=timeout, url=url, token=token).score
