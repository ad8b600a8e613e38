"""@tool builds the model-facing JSON Schema and description from the function itself."""

from enum import Enum
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, Field

from arknb.tools import ToolContext, tool
from arknb.tools._docstring import parse_docstring


class Point(BaseModel):
    x: float
    y: float = 0.0


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


def test_scalar_types_map_to_json_schema_types_and_required_list():
    @tool
    def f(s: str, i: int, x: float, flag: bool) -> None:
        """Doc."""

    props = f.parameters["properties"]
    assert {k: v["type"] for k, v in props.items()} == {
        "s": "string", "i": "integer", "x": "number", "flag": "boolean"}
    assert f.parameters["required"] == ["s", "i", "x", "flag"]
    assert f.parameters["type"] == "object"


def test_defaults_are_in_schema_and_defaulted_params_are_not_required():
    @tool
    def f(a: int, b: int = 3, c: str = "hi") -> None:
        """Doc."""

    assert f.parameters["required"] == ["a"]
    assert f.parameters["properties"]["b"]["default"] == 3
    assert f.parameters["properties"]["c"]["default"] == "hi"


def test_optional_param_allows_null():
    @tool
    def f(a: Optional[int] = None, b: str | None = None) -> None:
        """Doc."""

    for name in ("a", "b"):
        kinds = {branch.get("type") for branch in f.parameters["properties"][name]["anyOf"]}
        assert "null" in kinds
    assert "required" not in f.parameters


def test_list_and_dict_params_have_item_schemas():
    @tool
    def f(nums: list[int], scores: dict[str, float]) -> None:
        """Doc."""

    props = f.parameters["properties"]
    assert props["nums"] == {"type": "array", "items": {"type": "integer"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}


def test_pydantic_model_param_is_a_ref_into_defs():
    @tool
    def f(p: Point) -> None:
        """Doc."""

    assert f.parameters["properties"]["p"] == {"$ref": "#/$defs/Point"}
    point = f.parameters["$defs"]["Point"]
    assert point["required"] == ["x"]
    assert set(point["properties"]) == {"x", "y"}


def test_literal_and_enum_params_list_their_values():
    @tool
    def f(mode: Literal["fast", "slow"], colour: Colour = Colour.RED) -> None:
        """Doc."""

    props = f.parameters["properties"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    colour_schema = f.parameters["$defs"]["Colour"]
    assert colour_schema["enum"] == ["red", "blue"]
    assert props["colour"]["default"] == "red"


def test_pydantic_title_noise_is_removed_but_a_property_named_title_stays():
    @tool
    def f(title: str, p: Point) -> None:
        """Doc."""

    schema = f.parameters
    assert "title" not in schema
    assert "title" in schema["properties"]
    assert "title" not in schema["properties"]["title"]
    assert "title" not in schema["$defs"]["Point"]
    assert all("title" not in prop for prop in schema["$defs"]["Point"]["properties"].values())


def test_extra_arguments_are_forbidden_in_schema():
    @tool
    def f(a: int) -> None:
        """Doc."""

    assert f.parameters["additionalProperties"] is False


def test_no_parameter_tool_has_empty_properties():
    @tool
    def now() -> str:
        """Doc."""
        return "noon"

    assert now.parameters["properties"] == {}


def test_context_parameter_is_excluded_from_schema_under_any_name():
    @tool
    def f(query: str, runtime_info: ToolContext) -> str:
        """Doc."""
        return query

    assert set(f.parameters["properties"]) == {"query"}
    assert f.parameters["required"] == ["query"]
    assert f.takes_context


def test_tool_without_context_parameter_does_not_take_context():
    @tool
    def f(a: int) -> int:
        """Doc."""
        return a

    assert not f.takes_context


def test_description_is_first_docstring_paragraph_joined():
    @tool
    def f(a: int) -> None:
        """Look up a thing
        in the catalogue.

        Longer explanation the model does not need.
        """

    assert f.description == "Look up a thing in the catalogue."
    assert f.definition.description == "Look up a thing in the catalogue."


def test_args_section_gives_per_parameter_descriptions():
    @tool
    def f(city: str, days: int = 1, units: str = "metric") -> None:
        """Weather forecast.

        Args:
            city: The city name,
                in English.
            days (int): How many days ahead.

        Returns:
            units: not a parameter description, it is in Returns.
        """

    props = f.parameters["properties"]
    assert props["city"]["description"] == "The city name, in English."
    assert props["days"]["description"] == "How many days ahead."
    assert "description" not in props["units"]


def test_annotated_field_description_wins_over_docstring():
    @tool
    def f(n: Annotated[int, Field(ge=0, description="from Field")]) -> None:
        """Doc.

        Args:
            n: from docstring
        """

    prop = f.parameters["properties"]["n"]
    assert prop["description"] == "from Field"
    assert prop["minimum"] == 0


def test_explicit_description_and_name_override_function():
    @tool(name="lookup.v2", description="Explicit.")
    def f(a: int) -> None:
        """Docstring."""

    assert (f.name, f.description) == ("lookup.v2", "Explicit.")
    assert f.definition.name == "lookup.v2"


def test_parameter_named_like_a_pydantic_attribute_keeps_its_name_in_schema():
    @tool
    def f(json: str, model_config: int = 0) -> None:
        """Doc."""

    assert set(f.parameters["properties"]) == {"json", "model_config"}
    assert f.parameters["required"] == ["json"]


def test_docstring_parser_without_docstring_is_empty():
    parsed = parse_docstring(None)
    assert (parsed.description, parsed.params) == ("", {})


def test_docstring_parser_summary_stops_at_section_header_without_blank_line():
    parsed = parse_docstring("Summary line.\nArgs:\n    a: first\n")
    assert parsed.description == "Summary line."
    assert parsed.params == {"a": "first"}
