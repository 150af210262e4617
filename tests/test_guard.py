import asyncio
import json

import pytest

from runtime.engine.events import EventType, RuntimeEventBus
from runtime.guard import (
    AllowList,
    ApprovalError,
    ApprovalManager,
    ApprovalStatus,
    Budget,
    Decision,
    DenyEffects,
    DenyList,
    GuardEnforcer,
    GuardRequest,
    GuardResult,
    RateLimit,
    RequireConfirmation,
    UnknownApprovalError,
)
from runtime.messages import ToolCall


def req(tool: str = "search", **kwargs) -> GuardRequest:
    return GuardRequest(tool=tool, arguments={"q": "x"}, **kwargs)


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- policies -----------------------------------------------------------------------------

def test_allow_list():
    policy = AllowList(["search"])
    assert policy.check(req("search")) is None
    assert policy.check(req("shell")) == GuardResult(
        Decision.DENY, "tool 'shell' is not in the allow list", "AllowList")


def test_deny_list():
    policy = DenyList(["shell"])
    assert policy.check(req("search")) is None
    assert policy.check(req("shell")) == GuardResult(Decision.DENY, "tool 'shell' is denied", "DenyList")


def test_require_confirmation_until_approved():
    policy = RequireConfirmation(["send_email"])
    assert policy.check(req("search")) is None
    assert policy.check(req("send_email")).decision is Decision.PENDING
    assert policy.check(req("send_email", approved=True)) is None


def test_rate_limit_sliding_window():
    clock = FakeClock()
    policy = RateLimit("search", max_calls=2, per_seconds=10, clock=clock)
    policy.record("search")
    clock.now += 4
    policy.record("search")
    policy.record("other")  # other tools do not count
    denied = policy.check(req("search"))
    assert denied.decision is Decision.DENY
    assert denied.reason == "rate limit: tool 'search' allows 2 calls per 10s"
    assert policy.check(req("other")) is None
    clock.now += 6  # the first call leaves the window
    assert policy.check(req("search")) is None
    policy.record("search")
    assert policy.check(req("search")).decision is Decision.DENY


def test_budget_counts_calls_and_reads_token_usage():
    budget = Budget(max_calls=2, max_tokens=100)
    assert budget.check(req(usage_tokens=99)) is None
    assert budget.check(req(usage_tokens=100)).reason == "budget: 100 tokens used (max 100)"
    budget.record("a")
    budget.record("b")
    assert budget.check(req()).reason == "budget: 2 tool calls used (max 2)"
    assert Budget().check(req(usage_tokens=10**9)) is None


# -- enforcer -----------------------------------------------------------------------------

def test_no_policies_allows():
    result = GuardEnforcer().check(req())
    assert result == GuardResult(Decision.ALLOW)
    assert result.allowed


def test_first_deny_wins_over_pending_and_later_denies():
    enforcer = GuardEnforcer([RequireConfirmation(["shell"]), DenyList(["shell"]), AllowList(["search"])])
    assert enforcer.check(req("shell")).policy == "DenyList"


def test_pending_when_nobody_denies():
    enforcer = GuardEnforcer([RequireConfirmation(["shell"]), AllowList(["shell", "search"])])
    assert enforcer.check(req("shell")).decision is Decision.PENDING
    assert enforcer.check(req("shell", approved=True)).decision is Decision.ALLOW
    assert enforcer.check(req("search")).decision is Decision.ALLOW


def test_record_call_feeds_stateful_policies():
    clock = FakeClock()
    enforcer = GuardEnforcer([RateLimit("search", 1, 60, clock=clock), Budget(max_calls=2)])
    assert enforcer.check(req("search")).allowed
    enforcer.record_call("search")
    assert enforcer.check(req("search")).policy == "RateLimit"
    enforcer.record_call("other")
    assert enforcer.check(req("other")).policy == "Budget"


def test_from_constraints_dict():
    enforcer = GuardEnforcer.from_constraints({
        "allow": ["search", "shell", "email"],
        "deny": ["shell"],
        "require_confirmation": ["email"],
        "rate_limits": {"search": (1, 60)},
        "max_tool_calls": 5,
    })
    assert enforcer.check(req("search")).allowed
    assert enforcer.check(req("shell")).policy == "DenyList"
    assert enforcer.check(req("calc")).policy == "AllowList"
    assert enforcer.check(req("email")).decision is Decision.PENDING
    enforcer.record_call("search")
    assert enforcer.check(req("search")).policy == "RateLimit"


def test_from_constraints_accepts_enforcer_policies_or_none():
    enforcer = GuardEnforcer([DenyList(["x"])])
    assert GuardEnforcer.from_constraints(enforcer) is enforcer
    assert GuardEnforcer.from_constraints(None).check(req("x")).allowed
    assert not GuardEnforcer.from_constraints([DenyList(["x"])]).check(req("x")).allowed
    combined = GuardEnforcer([AllowList(["x", "y"])], constraints={"deny": ["y"]})
    assert [combined.check(req(t)).decision for t in "xyz"] == [Decision.ALLOW, Decision.DENY, Decision.DENY]


def test_unknown_constraint_key_is_named():
    with pytest.raises(ValueError, match="unknown guard constraint.*max_calls"):
        GuardEnforcer.from_constraints({"max_calls": 3})


def test_request_from_tool_call():
    request = GuardRequest.from_call(ToolCall(id="c1", name="search", arguments={"q": "x"}), node="exec")
    assert (request.tool, request.arguments, request.call_id, request.node) == ("search", {"q": "x"}, "c1", "exec")


# -- approvals ----------------------------------------------------------------------------

def test_request_then_approve():
    manager = ApprovalManager()
    pending = manager.request("shell", {"cmd": "ls"}, call_id="c1", node="exec", reason="needs a human")
    assert pending.status == "pending" and not pending.resolved
    assert manager.pending() == [pending]
    approved = manager.approve(pending.id)
    assert approved.status is ApprovalStatus.APPROVED
    assert manager.get(pending.id) == approved
    assert manager.pending() == []


def test_deny_keeps_the_reason():
    manager = ApprovalManager()
    item = manager.request("shell", {"cmd": "rm -rf /"})
    denied = manager.deny(item.id, "too dangerous")
    assert (denied.status, denied.decision_reason) == ("denied", "too dangerous")


def test_ids_are_short_and_unique():
    manager = ApprovalManager()
    ids = {manager.request("t").id for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 8 for i in ids)


def test_unknown_id_and_double_resolution_are_clear_errors():
    manager = ApprovalManager()
    with pytest.raises(UnknownApprovalError, match="unknown approval 'nope'") as info:
        manager.approve("nope")
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "unknown approval 'nope'"
    item = manager.request("shell")
    manager.approve(item.id)
    with pytest.raises(ApprovalError, match=f"approval '{item.id}' for tool 'shell' is already approved"):
        manager.deny(item.id, "late")


async def test_wait_resolves_on_approval():
    manager = ApprovalManager()
    item = manager.request("shell")
    waiters = [asyncio.create_task(manager.wait(item.id)) for _ in range(2)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    manager.deny(item.id, "no")
    results = await asyncio.wait_for(asyncio.gather(*waiters), timeout=1)
    assert [r.status for r in results] == ["denied", "denied"]
    assert (await manager.wait(item.id)).decision_reason == "no"  # already resolved: immediate


def test_on_change_called_on_request_and_resolution_until_unsubscribed():
    manager = ApprovalManager()
    seen = []
    unsubscribe = manager.on_change(lambda r: seen.append((r.tool, r.status)))
    manager.on_change(lambda r: 1 / 0)  # a broken listener does not stop the others
    item = manager.request("shell")
    manager.approve(item.id)
    unsubscribe()
    manager.request("other")
    assert seen == [("shell", "pending"), ("shell", "approved")]


def test_events_are_published():
    bus = RuntimeEventBus()
    manager = ApprovalManager(event_bus=bus)
    item = manager.request("shell", {"cmd": "ls"}, node="exec", reason="needs a human")
    manager.deny(item.id, "not today")
    requested, resolved = bus.history
    assert requested.type == EventType.APPROVAL_REQUESTED
    assert requested.node == "exec"
    assert requested.payload == {"id": item.id, "tool": "shell", "arguments": {"cmd": "ls"},
                                 "decision": "pending", "reason": "needs a human"}
    assert resolved.type == EventType.APPROVAL_RESOLVED
    assert resolved.payload == {"id": item.id, "tool": "shell", "arguments": {"cmd": "ls"},
                                "decision": "denied", "reason": "not today"}


async def test_snapshot_restore_round_trips_through_json():
    manager = ApprovalManager()
    waiting = manager.request("shell", {"cmd": "ls"}, call_id="c1", node="exec")
    done = manager.request("email")
    manager.approve(done.id)
    data = json.loads(json.dumps(manager.snapshot()))

    restored = ApprovalManager()
    restored.restore(data)
    assert restored.pending() == [waiting]
    assert restored.get(done.id).status is ApprovalStatus.APPROVED
    restored.approve(waiting.id)
    assert (await restored.wait(waiting.id)).status == "approved"


async def test_restore_wakes_waiters_of_requests_resolved_in_the_snapshot():
    manager = ApprovalManager()
    item = manager.request("shell")
    waiter = asyncio.create_task(manager.wait(item.id))
    await asyncio.sleep(0)
    other = ApprovalManager()
    other.restore(manager.snapshot())
    other.approve(item.id)
    manager.restore(other.snapshot())
    assert (await asyncio.wait_for(waiter, timeout=1)).status == "approved"


# -- effects (seed 000: tool_effects is read by guard checks) -----------------------------------

def test_deny_effects_by_the_tools_own_tag_and_after_an_earlier_effect():
    plain = DenyEffects(["network"])
    assert plain.check(req(effect_tags=frozenset({"read"}))) is None
    denied = plain.check(req(effect_tags=frozenset({"network", "read"})))
    assert denied.decision is Decision.DENY and denied.reason == "tool 'search' has the denied effect network"
    after = DenyEffects(["network"], after=["reads_secrets"])
    assert after.check(req(effect_tags=frozenset({"network"}))) is None
    late = after.check(req(effect_tags=frozenset({"network"}), tool_effects=frozenset({"reads_secrets"})))
    assert late.decision is Decision.DENY and "after a tool with the effect reads_secrets" in late.reason


async def test_the_executor_gives_policies_the_runs_tool_effects():
    from runtime import ReactiveRunner, ReActState, RunContext, tool
    from runtime.node import ToolExecutor

    @tool(effect_tags=["reads_secrets"])
    def read_vault(name: str) -> str:
        """Read a secret."""
        return "s3cr3t"

    @tool(effect_tags=["network"])
    def post(text: str) -> str:
        """Post a message."""
        return "posted"

    executor = ToolExecutor(tools=[read_vault, post],
                            constraints=GuardEnforcer([DenyEffects(["network"], after=["reads_secrets"])]))
    runner = ReactiveRunner(executor, ReActState, RunContext(approval_manager=ApprovalManager()))
    await runner.run(input_data={"actions": [ToolCall(id="a", name="post", arguments={"text": "hi"})]})
    await runner.run(input_data={"actions": [ToolCall(id="b", name="read_vault", arguments={"name": "k"})]})
    await runner.run(input_data={"actions": [ToolCall(id="c", name="post", arguments={"text": "s3cr3t"})]})
    contents = [m.content for m in runner.state_manager.model.messages]
    assert contents[:2] == ["posted", "s3cr3t"]
    assert contents[2] == ("Error: tool 'post' was denied: tool 'post' (network) may not run after a tool with "
                           "the effect reads_secrets")
    assert "deny_effects" in str(pytest.raises(ValueError, GuardEnforcer, constraints={"deny_effect": []}).value)


async def test_a_react_run_with_deny_effects_constraints_refuses_the_tagged_tool():
    """The constraints dict of `create_react_node` takes `deny_effects`: the model reads the refusal."""
    from runtime import Agent, ModelClient, ScriptedProvider, create_react_node, human, tool

    @tool(effect_tags=["network"])
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise AssertionError("a denied tool must not run")

    script = ScriptedProvider([{"tool_calls": [{"name": "fetch", "arguments": {"url": "http://x"}}]}, "offline"])
    root = create_react_node(model_client=ModelClient(script), tools=[fetch], constraints={"deny_effects": ["network"]})
    result = await Agent(root).run({"messages": [human("fetch x")]})
    assert result.final_answer == "offline"
    assert script.requests[1].messages[-1].content == (
        "Error: tool 'fetch' was denied: tool 'fetch' has the denied effect network")
