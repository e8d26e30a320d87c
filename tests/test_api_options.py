"""The front door's settings: an options value, given whole or field by field as keywords."""

from __future__ import annotations

import inspect

import pytest

import netsim
from netsim import api
from netsim.workflows.options import options_of


def test_keywords_fill_an_options_value_and_win_over_its_fields():
    assert options_of(api.RunOptions, None, {"seed": 3}) == api.RunOptions(seed=3)
    given = api.RunOptions(seed=1, label="a")
    assert options_of(api.RunOptions, given, {"seed": 3}) == api.RunOptions(seed=3, label="a")
    assert options_of(api.RunOptions, given, {}) is given
    assert options_of(api.CompareOptions, None, {}).scheduler is None


def test_a_keyword_no_options_value_has_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="seeds"):
        options_of(api.RunOptions, None, {"seeds": 3})
    with pytest.raises(TypeError, match="seed"):
        netsim.sweep("quickstart", ["run.batch_size=8,16"], seed=3)


def test_race_options_by_keyword_are_checked_as_when_made():
    with pytest.raises(ValueError, match="learning-rate grid is empty"):
        options_of(api.RaceOptions, None, {"lrs": []})
    assert options_of(api.RaceOptions, None, {"lrs": [0.3, 0.1, 0.3]}).lrs == (0.1, 0.3)


def test_sweep_jobs_and_its_old_name_workers():
    assert api.SweepOptions(workers=2).processes == 2
    assert api.SweepOptions(jobs=3).processes == 3
    with pytest.raises(ValueError, match="old name"):
        api.SweepOptions(jobs=2, workers=3)


def test_every_keyword_a_verb_took_is_a_field_of_its_options():
    """The keywords these verbs named before their options values keep working."""
    before = {
        api.run: (
            {"label", "prepared", "overwrite", "progress_every", "overrides", "seed", "data_dir"},
            api.RunOptions,
        ),
        api.compare: (
            {
                "plots",
                "window",
                "on_run",
                "overwrite",
                "overrides",
                "seed",
                "data_dir",
                "scheduler",
            },
            api.CompareOptions,
        ),
        api.sweep: (
            {
                "overrides",
                "data_dir",
                "jobs",
                "scheduler",
                "resume",
                "on_done",
                "on_plan",
                "overwrite",
                "workers",
            },
            api.SweepOptions,
        ),
        api.recommend: (
            {"lrs", "budget_s", "target", "alike", "jobs", "scheduler"},
            api.RaceOptions,
        ),
        api.real: (
            {"label", "overwrite", "overrides", "seed", "data_dir", "host", "port", "paced"},
            api.RealOptions,
        ),
        api.predict: ({"plots", "data_dir", "seeds", "calibrate_from"}, api.PredictOptions),
    }
    for verb, (names, kind) in before.items():
        params = inspect.signature(verb).parameters
        assert len(params) <= 9  # at most 8 named, and the keywords
        fields = set(inspect.signature(kind).parameters)
        assert names <= fields, (verb.__name__, names - fields)
