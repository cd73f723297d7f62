"""Property: a send's tool results are rewritten as the book's view says, each once, in order.

Random sends of function responses (ids from a small pool, repeated ids included) are
planned against random :class:`ResultsView` values (held repeats, ids the session never saw,
ids whose result goes as content). The reference is :mod:`adk_live_resume.conversation.send_plan`'s
contract:

* every response is noted under its call's id, and a readdressed one under its repeat's too;
  a repeat is answered at most once per send (the book hands each repeat over once);
* what is sent keeps the responses in order, each under its repeat's id where it has one,
  without those whose call the session never saw; nothing is sent when nothing is left;
* the results taken out are exactly those ids, once each, in the order sent; those told as
  content are the ones the view says go as a turn;
* the placement never loses the content: it is sent (alone, the user quiet) or held;
* planning is pure: the caller's kwargs are left as they were.
"""

from __future__ import annotations

import copy

from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from adk_live_resume.conversation.send_plan import plan_results
from adk_live_resume.conversation.tool_calls import ResultsView

CALLS = ["c1", "c2", "c3", "c4"]
REPEATS = ["r1", "r2"]
SENDS = st.lists(st.sampled_from(CALLS), min_size=1, max_size=6)
VIEWS = st.builds(
    ResultsView,
    repeats=st.dictionaries(
        st.sampled_from(CALLS),
        st.tuples(st.sampled_from(REPEATS), st.sampled_from(["f", None])),
        max_size=2,
    ),
    unknown=st.frozensets(st.sampled_from(CALLS + REPEATS)),
    as_turn=st.frozensets(st.sampled_from(CALLS + REPEATS)),
)


@given(SENDS, VIEWS, st.booleans(), st.booleans())
def test_results_are_rewritten_as_the_view_says_each_once_in_order(
    ids: list[str], view: ResultsView, has_turn: bool, user_busy: bool
) -> None:
    kwargs = {
        "function_responses": [
            types.FunctionResponse(id=i, name="f", response={"n": n}) for n, i in enumerate(ids)
        ]
    }
    before = copy.deepcopy(kwargs)

    plan = plan_results("send_tool_response", kwargs, view)

    assert kwargs == before
    expected_results: list[tuple[str, dict[str, int]]] = []
    targets: list[str] = []
    answered: set[str] = set()
    for n, call_id in enumerate(ids):
        expected_results.append((call_id, {"n": n}))
        target = call_id
        if call_id in view.repeats and call_id not in answered:
            answered.add(call_id)
            target = view.repeats[call_id][0]
            expected_results.append((target, {"n": n}))
        targets.append(target)
    assert list(plan.results) == expected_results
    assert dict(plan.readdress) == {i: view.repeats[i] for i in answered}
    # (a response whose id was readdressed goes under the repeat's id, each time it comes)
    sent_ids = [plan.readdress[i][0] if i in plan.readdress else i for i in ids]
    unknown = list(dict.fromkeys(t for t in targets if t in view.unknown))
    assert list(plan.unknown) == unknown
    assert list(plan.as_turn) == [i for i in unknown if i in view.as_turn]
    kept = [(i, n) for n, i in enumerate(sent_ids) if i not in plan.unknown]
    if not kept:
        assert plan.send is None
    else:
        assert plan.send is not None
        sent = plan.send[1]["function_responses"]
        assert [(str(r.id), r.response["n"]) for r in sent] == kept

    turn = ("send_client_content", {"turns": [], "turn_complete": True}) if has_turn else None
    placed = plan.place(turn, user_busy=user_busy)
    if turn is not None:
        assert (placed.send is turn) != (placed.held is turn), "the content is sent or held"
        assert placed.send is turn or placed.send == plan.send
    else:
        assert placed.send == plan.send and placed.held is None
