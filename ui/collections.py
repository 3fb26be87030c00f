"""Which collection the app searches, and which one an upload goes into.

The collections are the index folders under SEMSEARCH_ROOT (`indexer.build.collections`: the folder
`python -m search.api --root` serves), and SEMSEARCH_INDEX, the one the app opens first, even
before its first build. The sidebar offers them when there is more than one; a link keeps the
one open (`?collection=NAME`).

Uploads go where the person chooses. By default that is the open collection, but never the demo
index (`indexes/demo`): a person's notes would be mixed into Python's documentation, so uploads
from the demo go to a new collection, `my-documents`, unless the person picks another.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from indexer import settings
from indexer.build.collections import COLLECTION_NAME_RULE, is_collection_name, list_collections
from indexer.layout import IndexLayout
from ui.highlight import escape_markdown

# Session state: the name of the open collection (the sidebar's selectbox).
COLLECTION = "collection"
# Session state: the upload target's choice, the open collection it was chosen beside, and a new
# collection's name.
UPLOAD_TARGET, TARGET_OF, NEW_NAME = "upload_target", "upload_target_of", "new_collection_name"
NEW_COLLECTION = "New collection…"  # no collection name holds a space or "…"
DEFAULT_NEW_NAME = "my-documents"


def home() -> Path:
    """SEMSEARCH_INDEX: the collection the app opens first."""
    return settings.index_dir()


def collections() -> dict[str, Path]:
    """Name -> folder of every collection the app offers: those under the root, and the home one."""
    found = {folder.name: folder for folder in list_collections(settings.collections_root())}
    found.setdefault(home().name, home())
    return dict(sorted(found.items()))


def is_demo(folder: Path) -> bool:
    return folder.resolve() == (settings.PROJECT_ROOT / settings.DEFAULT_INDEX).resolve()


def remember_link_choice() -> str | None:
    """Once per session: the collection a link names (`?collection=NAME`), when there is one; a
    name no collection has opens the first one, and the notice returned says so."""
    if COLLECTION in st.session_state:
        return None
    wanted = st.query_params.get(COLLECTION, "")
    found = wanted in collections()
    st.session_state[COLLECTION] = wanted if found else home().name
    if not wanted or found:
        return None
    return (f"The link's collection={wanted[:80]!r} was not used: there is no such collection under "
            f"`{settings.collections_root()}`. Showing {home().name}.")


def open_collection() -> Path:
    """The folder of the collection the page shows: the sidebar's choice when there are several."""
    offered = collections()
    if st.session_state.get(COLLECTION) not in offered:
        st.session_state[COLLECTION] = home().name  # deleted meanwhile: back to the first one
    if len(offered) > 1:
        st.sidebar.selectbox("Collection", list(offered), key=COLLECTION,
                             help=f"The indexes under `{settings.collections_root()}`; each has its own "
                             "documents and model.")
    return offered[st.session_state[COLLECTION]]


def keep_in_link(folder: Path) -> None:
    """A collection other than the first one goes into the page's URL."""
    if folder.name != home().name:
        st.query_params[COLLECTION] = folder.name
    else:
        st.query_params.pop(COLLECTION, None)


def upload_target(open_folder: Path) -> Path | None:
    """The sidebar's "Add to": the folder an upload goes into, or None (with the reason shown)
    while a new collection's name cannot be used."""
    offered = collections()
    names = [name for name, folder in offered.items() if not is_demo(folder)] + [NEW_COLLECTION]
    # The choice follows the collection the page shows, each time another one is opened.
    if st.session_state.get(TARGET_OF) != open_folder.name or st.session_state.get(UPLOAD_TARGET) not in names:
        mine = open_folder.name if not is_demo(open_folder) else DEFAULT_NEW_NAME
        st.session_state[UPLOAD_TARGET] = mine if mine in names else NEW_COLLECTION
        st.session_state[TARGET_OF] = open_folder.name
    choice = st.sidebar.selectbox(
        "Add to", names, key=UPLOAD_TARGET,
        help="The collection the files go into. The demo index takes no uploads, so that your "
        "documents are not mixed into Python's documentation.")
    if choice != NEW_COLLECTION:
        return offered[choice]
    name = st.sidebar.text_input("Name of the new collection", value=DEFAULT_NEW_NAME, key=NEW_NAME).strip()
    return new_collection_folder(name)


def new_collection_folder(name: str) -> Path | None:
    """The folder a new collection `name` goes into; None, with the reason shown, when it cannot."""
    root = settings.collections_root()
    if not is_collection_name(name):
        st.sidebar.error(f"{escape_markdown(name[:80]) or 'An empty name'} cannot name a collection: "
                         f"{COLLECTION_NAME_RULE}.")
        return None
    folder = root / name
    # A folder the app's uploads started holds them before its first commit makes it an index.
    if folder.exists() and folder.name not in collections() and not IndexLayout(folder).uploads.is_dir():
        st.sidebar.error(f"`{folder}` is a folder that holds no index; choose another name.")
        return None
    return folder


def open_after_upload(folder: Path) -> None:
    """A button that opens `folder`, the collection an upload went into, when another one is open."""
    if folder.name != st.session_state.get(COLLECTION) and folder.name in collections():
        st.sidebar.button(f"Search {folder.name}", key="open_upload_target",
                          on_click=st.session_state.__setitem__, args=(COLLECTION, folder.name))
