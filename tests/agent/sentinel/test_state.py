"""The sentinel's switches and per-thread bookkeeping (agent/sentinel/state.py)."""

import threading

from tensorsight.agent.sentinel.state import Call, Switches, ThreadState, silenced, st, sw


def test_silenced_follows_the_first_report(fresh_sentinel):
    assert not silenced()
    sw.first_reported = True
    assert silenced()


def test_thread_state_is_per_thread(fresh_sentinel):
    st.depth, st.observing = 3, False
    seen = {}

    def other():
        seen["depth"], seen["observing"], seen["calls"] = st.depth, st.observing, st.calls

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == {"depth": 0, "observing": True, "calls": []}
    assert st.depth == 3


def test_fresh_switches_are_disarmed():
    switches = Switches()
    assert (switches.enabled, switches.installed, switches.first_reported, switches.last) == (False, False, False, None)
    assert switches.handles == [] and switches.tensor_type == ()


def test_each_call_and_thread_state_owns_its_containers():
    first, second = Call(None, None, None, [], True), Call(None, None, None, [], True)
    first.kwargs["x"] = 1
    first.output_grads[0] = 1
    assert second.kwargs == {} and second.output_grads == {}
    assert ThreadState().calls is not ThreadState().calls
