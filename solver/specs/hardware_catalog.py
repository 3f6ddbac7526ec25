"""The shipped hardware catalog: list it, and load a device by name or a user's YAML by path."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.close_names import close_names
from solver.specs.hardware import Hardware, load_hardware_file

_YAML_SUFFIXES = (".yaml", ".yml")


def list_hardware() -> list[str]:
    """Catalog names (file stems), sorted."""
    folder = catalog_dir("hardware")
    return sorted(p.stem for p in folder.iterdir() if p.suffix in _YAML_SUFFIXES and p.is_file())


def load_hardware(name_or_path: str) -> Hardware:
    """A catalog device ('h200-sxm', 'Atlas_A3', ...) or a user's hardware YAML file."""
    if _is_path(name_or_path):
        return _checked_user_file(Path(name_or_path).expanduser())
    key = _normalize(name_or_path)
    names = list_hardware()
    if key not in names:
        raise InputError("hardware", _unknown_message(name_or_path, key, names))
    return _load_catalog_entry(key)


def catalog_vendors() -> tuple[str, ...]:
    """The vendors the catalog's devices name, sorted: the spellings engine profiles and calibration use."""
    return _catalog_vendors(tuple(list_hardware()))


@lru_cache(maxsize=4)
def _catalog_vendors(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({_load_catalog_entry(n).vendor for n in names}))


def vendor_slip(vendor: str) -> str | None:
    """The catalog vendor `vendor` misspells (nvdia -> nvidia), or None: a catalog vendor, or a new one (intel)
    no catalog vendor is close to. A slip would pair the device with no engine of its vendor and no calibration."""
    import difflib

    known = catalog_vendors()
    if vendor in known:
        return None
    close = difflib.get_close_matches(vendor, known, n=1, cutoff=0.8)
    return close[0] if close else None


def _checked_user_file(path: Path) -> Hardware:
    """A user's hardware file, refused where it would be read as something else: a vendor that misspells a catalog
    vendor, or a catalog device's name on other figures (factors are fitted per device name, so the catalog
    device's calibration would price this file's figures)."""
    if not path.is_file():  # under the field that named it, as a misspelt catalog name is
        raise InputError("hardware", f"{path}: a folder, not a hardware YAML" if path.is_dir()
                         else f"file not found: {path}")
    hw = load_hardware_file(path)
    meant = vendor_slip(hw.vendor)
    if meant is not None:
        raise InputError(f"{path}: vendor", f"{hw.vendor!r} is no catalog vendor; did you mean {meant}? (known: "
                                            f"{', '.join(catalog_vendors())}; a new vendor's name is taken as "
                                            "written)")
    if hw.fitted_as is not None:
        carried = _normalize(hw.fitted_as)
        if carried not in list_hardware():
            raise InputError(f"{path}: fitted_as", f"{hw.fitted_as!r} is no catalog device (known: "
                                                   f"{', '.join(list_hardware())})")
        # spelt as the fit keys it (the catalog device's own name), as a catalog name is read however it is cased
        hw = hw.model_copy(update={"fitted_as": _load_catalog_entry(carried).name})
    key = _normalize(hw.name)
    if key in list_hardware():
        shipped = _load_catalog_entry(key)
        ignored = {"name", "description", "sources"}  # words, not figures
        mine, theirs = hw.model_dump(exclude=ignored), shipped.model_dump(exclude=ignored)
        differ = [k for k in mine if mine[k] != theirs[k]]
        if differ:
            raise InputError(f"{path}: name", f"{hw.name} is the catalog's device, and this file gives other "
                                              f"figures ({', '.join(differ)}): give it a name of its own (factors "
                                              f"are fitted per device name, so {key}'s calibration would price "
                                              f"these figures; `fitted_as: {key}` carries them to a variant "
                                              "measured alike)")
    return hw


def _is_path(text: str) -> bool:
    # Catalog names never carry a suffix or a separator, so either one (or an existing file) means a user file.
    looks_like_file = text.lower().endswith(_YAML_SUFFIXES) or "/" in text or "\\" in text
    try:
        return looks_like_file or Path(text).expanduser().is_file()
    except (OSError, ValueError):  # a name too long for a path, or with a NUL: not a file, so a catalog name
        return False


def catalog_spelling(name: str) -> str | None:
    """The catalog device's own name that `name` spells however cased or separated (H100-SXM: h100_sxm), or None
    where the catalog has no such device."""
    key = _normalize(name)
    return _load_catalog_entry(key).name if key in list_hardware() else None


def _normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


@lru_cache(maxsize=None)
def _load_catalog_entry(key: str) -> Hardware:
    # Hardware is frozen, so one shared instance per catalog name is safe.
    folder = catalog_dir("hardware")
    path = next(folder / f"{key}{suffix}" for suffix in _YAML_SUFFIXES if (folder / f"{key}{suffix}").is_file())
    return load_hardware_file(path)


def _unknown_message(given: str, key: str, names: list[str]) -> str:
    close = close_names(key, {n: n for n in names}, limit=3, cutoff=0.6)
    if close:
        return f"unknown hardware '{given}'; close names: {', '.join(close)}"
    return f"unknown hardware '{given}'; known: {', '.join(names)}"
