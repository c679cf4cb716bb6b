"""`mem doctor`: checks of a tree (checks.py, derived.py), its repairs (fixes.py), the report (doctor.py)."""
from memstrata.doctor.doctor import Doctor, DoctorReport, report_lines

__all__ = ["Doctor", "DoctorReport", "report_lines"]
