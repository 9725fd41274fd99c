"""``java_class``: a JVM class by name, made once per gateway, without walking its package path."""

from __future__ import annotations

from types import SimpleNamespace

from cdclake.runtime.spark import java_class


def test_a_class_by_name_calls_its_static_members_and_is_made_once(spark):
    integer = java_class(spark, "java.lang.Integer")
    assert integer.parseInt("12") + 1 == 13
    assert java_class(spark, "java.lang.Integer") is integer
    listed = java_class(spark, "java.util.ArrayList")()  # a constructor too
    listed.add("x")
    assert listed.size() == 1


def _client() -> SimpleNamespace:
    """What a ``JavaClass`` reads of its gateway client when it is made (it sends nothing then)."""
    return SimpleNamespace(gateway_property=SimpleNamespace(pool=None), converters=[])


def test_another_gateway_gets_its_own_class_and_no_jvm_gets_none():
    first = SimpleNamespace(_jvm=SimpleNamespace(_gateway_client=_client()))
    second = SimpleNamespace(_jvm=SimpleNamespace(_gateway_client=_client()))
    made = java_class(first, "java.lang.Long")
    assert made._gateway_client is first._jvm._gateway_client
    assert java_class(second, "java.lang.Long")._gateway_client is second._jvm._gateway_client
    assert java_class(SimpleNamespace(), "java.lang.Long") is None  # Spark Connect: no JVM in this process
