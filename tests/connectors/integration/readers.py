"""Helpers shared by test modules (moved out of test_confluence_sync.py, so no test module imports another)."""

from __future__ import annotations

A, B, C = "alice", "bob", "carol"


READERS = {
    "page:101": {A, B},
    "attachment:att201": {A, B},
    "attachment:att203": {A, B},  # diagram.png: no text, found by its metadata, with page 101's ACL
    "page:102": {A},
    "page:103": {A},
    "page:104": {A},  # restricted only through its grandparent 102
    "page:105": {A},  # own restriction {bob, alice} intersects 102's {leads, carol}
    "page:106": {B},  # single-user page
    "attachment:att202": {B},  # inherits its page
    "page:107": {A, B},
    "blogpost:301": {A, B},
    "page:401": {A, C},
    "page:501": {A, B, C},
    "page:601": set(),  # nobody holds a read grant on LOCK
}
