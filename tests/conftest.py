"""Suite-wide settings.

The shared call cache (gcpc.llm.shared_cache) lives outside the workspace and would let one test's
recorded answers serve another's requests (and a developer's ~/.cache serve the suite), so it is off
for every test and every subprocess a test starts; tests of the cache switch it on with their own
folder (GCPC_CACHE_DIR or `cache_dir`).
"""

import os

os.environ["GCPC_CACHE_DIR"] = "off"
