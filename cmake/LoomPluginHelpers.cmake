# In-tree plugins use the SDK's own loom_add_plugin() (sdk/cmake/LoomAddPlugin.cmake, installed
# with the SDK), so first-party and third-party plugins are built by one definition.
include(${PROJECT_SOURCE_DIR}/sdk/cmake/LoomAddPlugin.cmake)
