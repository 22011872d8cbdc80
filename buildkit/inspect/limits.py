"""Resource limits applied while reading a wheel (zip-bomb and hostile-input guards)."""

from __future__ import annotations

from typing import NamedTuple

MiB = 1024 * 1024
GiB = 1024 * MiB


class Limits(NamedTuple):
    """Bounds on what a wheel may declare and on what is kept in memory while reading it.

    - ``max_member_size``: largest declared uncompressed size of one member.
    - ``max_total_size``: largest sum of declared uncompressed sizes.
    - ``max_ratio``: largest uncompressed/compressed ratio of one member (members under
      ``ratio_floor`` bytes are exempt: small files compress absurdly well, and patchelf pads the
      segments it appends to the page size: pillow 13.0.0's grafted ``libXau`` is 2 MiB that deflate
      to 9 KiB, 224x). The declared sizes bound what is inflated in any case (``max_member_size``,
      ``max_total_size``), and the reader never inflates past them. ``.dist-info`` files are read
      whole into memory, so they are held to ``max_ratio`` from ``metadata_ratio_floor`` on.
    - ``max_members``: most zip entries.
    - ``max_bundle_entries``: most entries one clang offload bundle may list.
    - ``head_bytes``/``tail_bytes``: how much of the start of an ELF member, and of the bytes just before
      its section-header table, is kept while streaming (where .dynstr/.gnu.version_r and .shstrtab sit).
    - ``chunk_size``: decompressed bytes read per step.
    - ``max_second_pass_bytes``: most bytes a second pass may keep (the exact sections it needs).
    - ``dynamic_reach``: how much of the ``PT_LOAD`` segment before ``PT_DYNAMIC`` is kept (where
      patchelf puts the string and version tables it rewrites).
    - ``whole_member_bytes``: ELF members up to this size are always read to their end (CRC checked);
      larger ones stop once the loader's data is read, unless they are HIP host objects.
    - ``verify_members``: read every ELF member to its end, so every zip CRC is checked (slower: it
      gives up the early stop).
    - ``read_whole_bytes``: a member whose RECORD hash is checked (so it is read to its end anyway)
      and that is at most this many bytes compressed and four times that inflated is read with one
      ``pread`` and one inflate, and an ELF one is parsed from memory in one pass (0: every member
      is streamed, the parse keeping only what it needs).
    - ``offload_sample_bytes``: how many bytes of the code objects of one member's plain offload
      bundles are kept (at most 64 KiB from the start of each) to estimate what compressing them saves.
    - ``threaded_bytes``: a wheel whose file and members are both under this size is read on the
      caller's thread alone (starting threads costs more than they save on a few MiB).
    """

    max_member_size: int = 2 * GiB
    max_total_size: int = 8 * GiB
    max_ratio: float = 200.0
    ratio_floor: int = 64 * MiB
    metadata_ratio_floor: int = 1 * MiB
    max_members: int = 100_000
    max_bundle_entries: int = 4096
    head_bytes: int = 8 * MiB
    tail_bytes: int = 1 * MiB
    bundle_window: int = 1 * MiB
    chunk_size: int = 1 * MiB
    max_second_pass_bytes: int = 256 * MiB
    dynamic_reach: int = 4 * MiB
    whole_member_bytes: int = 1 * MiB
    verify_members: bool = False
    threaded_bytes: int = 8 * MiB
    offload_sample_bytes: int = 4 * MiB
    read_whole_bytes: int = 1 * MiB
