"""The real fields of ../shared/datasets (the folder beside the repository), as its
datasets.json lists them: the analysis scripts' default fields."""
import json
import os

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "datasets")


def shared_fields():
    """(path, dims fastest first without axes of 1, [fill value] or []) of each f32 field;
    nothing when the folder is absent."""
    listing = os.path.join(FOLDER, "datasets.json")
    for entry in json.load(open(listing)) if os.path.isfile(listing) else []:
        dims = [d for d in entry.get("dims_fastest_first", []) if d > 1]
        if dims and entry.get("dtype") == "f32":  # not the text corpus
            fill = entry.get("fill_value")
            yield os.path.join(FOLDER, entry["file"]), dims, [] if fill is None else [float(fill)]
