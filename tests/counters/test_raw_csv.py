"""ncu's raw page as CSV (fixtures/README.md says where the format facts come from)."""

from pathlib import Path

import pytest

from grader.counters.raw_csv import RawCsvError, number, parse_raw

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_transpose_fixture_reads_as_three_launches_in_order():
    rows = parse_raw((FIXTURES / "transpose_coalesced.ncu.log").read_text())
    assert [r.id for r in rows] == [0, 1, 2]
    assert {r.kernel for r in rows} == {"transpose"}
    naive, tiled = rows[0], rows[1]
    assert naive.values["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] == 1_048_576
    assert naive.values["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] == 32_768
    assert tiled.values["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 1_023_919
    assert tiled.units["gpu__time_duration.sum"] == "nsecond"
    assert "Kernel Name" not in tiled.values and "Block Size" not in tiled.values


def test_rows_are_sorted_by_id_and_tool_lines_anywhere_are_skipped():
    text = (FIXTURES / "transpose_coalesced.ncu.log").read_text().splitlines()
    header, units, *data = [line for line in text if not line.startswith("==")]
    shuffled = ["==PROF== Connected", header, "==WARNING== something", units, data[2], data[0], data[1],
                "==PROF== Disconnected"]
    assert [r.id for r in parse_raw("\n".join(shuffled))] == [0, 1, 2]


@pytest.mark.parametrize("text, value", [("1,048,576", 1048576.0), ("4.00", 4.0), ("31.25", 31.25),
                                         ("n/a", None), ("", None), ("  7 ", 7.0), ("1.5e+03", 1500.0),
                                         ("abc", None)])
def test_numbers(text, value):
    assert number(text) == value


def test_a_missing_table_is_an_error_with_a_reason():
    with pytest.raises(RawCsvError, match="no table"):
        parse_raw((FIXTURES / "permission.ncu.log").read_text())


def test_a_short_row_is_an_error():
    text = '"ID","Kernel Name","a__b.sum"\n"0","k"\n'
    with pytest.raises(RawCsvError, match="fields"):
        parse_raw(text)


def test_without_a_units_row_and_with_na():
    rows = parse_raw('"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","n/a"\n"1","k","2,048"\n')
    assert [r.values["dram__bytes_read.sum"] for r in rows] == [None, 2048.0]
    assert rows[0].units == {}
