"""The histograms' latency labels: one unit per magnitude, chosen by the value as printed."""

from kvtui.tui.widgets.histogram import short_ms


def test_a_value_that_rounds_up_takes_the_next_unit():
    """The 80x24 latency panel read "p99 1000ms" where wider screens read "1.0s"."""
    assert short_ms(999.6) == "1.0s"
    assert short_ms(9.996) == "10ms"
    assert short_ms(0.9996) == "1.0ms"
    assert short_ms(99_960) == "100s"


def test_values_inside_a_unit_keep_it():
    assert [short_ms(v) for v in (0.5, 7.84, 442.0, 999.4, 1_441.8, 4_071.4)] == [
        "0.50ms", "7.8ms", "442ms", "999ms", "1.4s", "4.1s"]
