"""The block turn: a code action answered in the block-rewrite format (lsp_server.assistant.rewrite).

The model writes the whole block again. An answer that stops after its words, with no code, goes on
from an opened fence in the same answer (asked again, small models repeat their words verbatim). Then
the turn goes through two phases:

- feedback: a block that cannot be the edit (does not apply or parse) goes back to the model with why,
  and the model writes it again after reading that, in the same exchange;
- candidates: once a check failed, every later answer is a fresh candidate for the request's prompt
  (with its second look, where it has one), not a reply to the failure: on the eval's Fix tasks a
  retry that reads the failed test's output did no better (docs/quality.md), and the prompt's start
  stays the cached one, so a candidate decodes little more than its answer. Write tests is the
  exception (its action's `reads_failed_checks`): its failures show the results the code really
  gives, which is what its next answer needs.

An answer's words before its code are a sentence or two; one that goes on past WORDS_MAX_CHARS with
no code is stopped there and goes on from an opened fence too, without the sentences it repeated.

The exchange (the request and what followed it) is kept apart from the conversation while the turn
runs, and joins it when the turn ends: the accepted answer's exchange, or when no candidate passed, the
first failed one, whose edit comes back marked failed.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine import ChatEngine, ChatRequest, ChatResult
from .checks.verifier import Verifier
from .conversation import RETRY_TEMPERATURE, Conversation, ToolCallRecord, TurnResult, count_answer
from .rewrite import code_block
from .tools.runner import ToolRunner

log = logging.getLogger("llama_lsp.block_turn")

# The longest an answer's words before its code may run: a sentence or two is asked for, and a small
# model may loop, writing one sentence again and again until the answer's bound.
WORDS_MAX_CHARS = 1000

Message = dict[str, Any]


@dataclass(frozen=True)
class BlockRequest:
    """What a block turn asks: the model reads `message` (the code and what is asked of it) and then
    `write`, which asks for the block after a sentence or two of analysis where the action needs one
    (Fix, Refactor): small models write a better block right after saying what is wrong, in the same
    answer, than in a second answer.
    """

    message: str
    write: str  # asks for the whole new block in one fenced code block; repeated after a refusal
    language: str = ""  # the fence's language tag
    write_tokens: int = 1024
    max_attempts: int = 3  # writes of the block, each after the previous one was refused
    # More to read for the candidates written after a failed check (a Fix: the code its problem names).
    # Not in the first prompt: with it, the 1.5B model fixed other tasks of the eval than without it,
    # and each of the two prompts is a candidate of its own.
    second_look: str = ""
    # A failed check goes back to the model, which writes again after reading it, rather than fresh
    # candidates (Write tests: the failures show the results the code really gives).
    reads_failed_checks: bool = False

    def prompt(self, second_look: bool = False) -> str:
        parts = [self.message, self.second_look if second_look else "", self.write]
        return "\n\n".join(part for part in parts if part)


@dataclass
class BlockTurn:
    """One block turn's state. `run` writes the block until `propose` accepts it (returns None) and the
    verifier's check passes, or the attempts run out.

    `propose` gets the code of the answer's fenced block and returns why it cannot be the edit. A block
    already refused is refused again without a check. Each prompt's first answer is greedy; the ones
    after it are sampled, seeded per attempt, so that the same request still gives the same tokens.
    """

    engine: ChatEngine
    conversation: Conversation
    runner: ToolRunner
    request: BlockRequest
    propose: Callable[[str], str | None]
    temperature: float = 0.0
    verifier: Verifier | None = None
    exchange: list[Message] = field(default_factory=list, init=False)  # the request and what followed
    refused: dict[str, str] = field(default_factory=dict, init=False)  # code -> why
    # The exchange whose edit comes back when no candidate passes: the first that failed a check.
    # Set, it also says the turn is in its candidates phase.
    first_failed: list[Message] | None = field(default=None, init=False)
    greedy: bool = field(default=True, init=False)  # the next answer is the first for its prompt
    result: TurnResult | None = field(default=None, init=False)
    records: list[ToolCallRecord] = field(default_factory=list, init=False)

    async def run(self) -> TurnResult:
        """The turn's content is what the accepted answer (or the first failed one) says before its code."""
        self.exchange = [{"role": "user", "content": self.request.prompt()}]
        try:
            for attempt in range(self.request.max_attempts):
                answer = await self._answer(attempt)
                if answer.finish_reason in ("cancelled", "error"):
                    self.exchange.append({"role": "assistant", "content": answer.content})
                    break
                if await self._accepted(answer):
                    break
        except BaseException:  # the conversation keeps what was said, as far as it went
            self.conversation.messages.extend(self.exchange)
            raise
        result = self.result
        assert result is not None  # max_attempts >= 1
        if result.finish_reason == "edit":
            result.content = _analysis(self.exchange[-1]["content"])
        elif self.first_failed is not None:  # no candidate passed: the first failed one's edit comes back
            self.exchange = self.first_failed
            result.content = _analysis(self.exchange[-1]["content"])
        else:
            result.content = ""
        self.conversation.messages.extend(self.exchange)
        return result

    async def _answer(self, attempt: int) -> ChatResult:
        temperature = self.temperature if self.greedy else max(self.temperature, RETRY_TEMPERATURE)
        self.greedy = False
        messages = [*self.conversation.messages, *self.exchange]
        answer = await self._generate(messages, temperature, attempt, keep_going=_words_or_code)
        if code_block(answer.content) is None and answer.finish_reason == "stop":
            # Small models often say what is wrong and stop there, or go on saying it; asked again, they
            # say it again. The same answer goes on instead, from an opened fence: the code, after the
            # words that lead to it. (One that ran to its bound without code is refused.)
            log.info("no code in the answer: it goes on from an opened fence")
            start = f"{_unrepeated(answer.content).rstrip()}\n\n```{self.request.language}\n".lstrip()
            continued = [*messages, {"role": "assistant", "content": start}]
            answer = await self._generate(continued, temperature, attempt, continue_answer=True)
        return answer

    async def _generate(
        self,
        messages: list[Message],
        temperature: float,
        attempt: int,
        continue_answer: bool = False,
        keep_going: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        answer = await self.engine.generate(
            ChatRequest(
                messages=messages,
                # The tools stay declared, unused, so that the prompt's prefix is the same as for every
                # other turn.
                tools=self.conversation.tools(),
                tool_choice="none",
                max_tokens=self.request.write_tokens,
                temperature=temperature,
                seed=attempt,
                slot=self.conversation.id,
                continue_answer=continue_answer,
            ),
            keep_going=keep_going,
        )
        self.result = count_answer(self.result, answer, self.records)
        return answer

    async def _accepted(self, answer: ChatResult) -> bool:
        """Judges the answer's block; moves the turn on to its next phase when it is refused."""
        assert self.result is not None
        code = code_block(answer.content)
        failed_check = False
        if code is None:
            problem: str | None = "There is no code block in your answer."
        elif code in self.refused:
            problem = self.refused[code]
        else:
            problem = self.propose(code)
            if problem is None and self.verifier is not None:
                problem = await self.verifier.check_latest(self.runner)
                failed_check = problem is not None
        self.records.append(ToolCallRecord("write_block", {"code": code}, problem or "accepted"))
        reply = {"role": "assistant", "content": answer.content}
        if problem is None:
            self.exchange.append(reply)
            self.result.finish_reason = "edit"
            return True
        log.info("block refused: %s", problem[:300])
        self.refused.setdefault(code or "", problem)
        if failed_check and self.request.reads_failed_checks:
            # Sampled, as after any feedback: read greedily, the 1.5B wrote the same test file again.
            self._feedback(reply, problem)
        elif failed_check and self.first_failed is None:
            self._start_candidates(reply)
        elif self.first_failed is None:
            self._feedback(reply, problem)
        return False

    def _feedback(self, reply: Message, problem: str) -> None:
        """The model reads why its block was refused, then writes it again. Only the latest refusal stays:
        each is a whole block (a test file can be thousands of tokens), and a pile of them would outgrow
        the context."""
        feedback = {"role": "user", "content": f"{problem}\n\n{self.request.write}"}
        self.exchange = [self.exchange[0], reply, feedback]

    def _start_candidates(self, failed: Message) -> None:
        """From the first failed check on, every answer is a fresh candidate: for the prompt with the
        second look, then for the same prompt again."""
        self.first_failed = [*self.exchange, failed]
        if self.request.second_look:
            self.exchange = [{"role": "user", "content": self.request.prompt(second_look=True)}]
            self.greedy = True


def _words_or_code(answer: str) -> bool:
    """Whether an answer goes on: it has reached its code, or its words are still short enough."""
    return len(answer) <= WORDS_MAX_CHARS or "```" in answer


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _unrepeated(words: str) -> str:
    """The words of an answer stopped for running too long: up to the first sentence said again (a
    model that loops repeats one), and without the sentence it was stopped in. An answer the model
    ended itself is kept as it is."""
    if len(words) <= WORDS_MAX_CHARS:
        return words
    starts = [0, *(match.end() for match in _SENTENCE_END.finditer(words))]
    said: set[str] = set()
    for start, end in itertools.pairwise(starts):
        sentence = words[start:end].strip()
        if sentence in said:
            return words[:start]
        said.add(sentence)
    return words[: starts[-1]] if len(starts) > 1 else words


def _analysis(answer: str) -> str:
    """What an answer says before its code."""
    return answer.split("```")[0].strip()
