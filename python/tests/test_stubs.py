"""The type stubs of sluice.Loader (python/sluice/__init__.pyi) name every keyword that
sluice.loader_keywords() lists, no other, each with the type the options table gives it: a
keyword renamed or added in the C++ tables fails here until the stubs follow."""
import ast
import pathlib

import sluice

STUBS = pathlib.Path(sluice.__file__).with_name("__init__.pyi")
# Keywords of sluice.Loader that are Python's own, not options of the loader's table.
PYTHON_ONLY = {"digest", "mix_records", "pin_memory"}
# Table options whose stub type is Python's (None: the launcher's rank and world).
PYTHON_TYPED = {"seed", "rank", "world"}
SIMPLE = {"int": "int", "float": "float", "bool": "bool", "str": "str",
          "bool | None": "Optional[bool]", "list[float]": "Sequence[float]",
          "list[str]": "Sequence[str]"}


def loader_init_keywords():
    tree = ast.parse(STUBS.read_text())
    aliases = {node.targets[0].id: node.value for node in tree.body
               if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    loader = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Loader")
    init = next(n for n in loader.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    out = {}
    for arg in init.args.kwonlyargs:
        annotation = arg.annotation
        if isinstance(annotation, ast.Name) and annotation.id in aliases:
            annotation = aliases[annotation.id]
        out[arg.arg] = annotation
    return out


def literal_names(annotation):
    """The names of Literal["a", "b"], or None for another annotation."""
    if not (isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "Literal"):
        return None
    elts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
    return [e.value for e in elts]


def test_the_stubs_name_every_loader_keyword_and_no_other():
    stubs = loader_init_keywords()
    keywords = {name for name, _, _ in sluice.loader_keywords()}
    named = set(stubs) - PYTHON_ONLY
    assert named - keywords == set(), f"in the stubs, not a keyword: {sorted(named - keywords)}"
    assert keywords - named == set(), f"a keyword missing from the stubs: {sorted(keywords - named)}"


def test_the_stubs_give_each_keyword_the_tables_type():
    stubs = loader_init_keywords()
    for name, kind, _ in sluice.loader_keywords():
        if name in PYTHON_TYPED:
            continue
        annotation = stubs[name]
        if kind in SIMPLE:
            assert ast.unparse(annotation) == SIMPLE[kind], (name, kind, ast.unparse(annotation))
        else:  # an enumeration: its names, in the table's order
            assert literal_names(annotation) == kind.split("|"), (name, kind,
                                                                  ast.unparse(annotation))
