# What `cmake --install` puts where, every path below the install prefix (so `--prefix P` moves
# all of it), one component per audience:
#   daemon: taot-planner and taotctl, the example planner plugin (lib/taot/plugins) and the
#           plugin interface's C header (include/taot/planner_plugin.h);
#   tools:  taot, taot-sim and taot-simranks;
#   client: libtaot_client.so and its C header;
#   python: the package `taot` (the extension and taot.torch), into lib/pythonX.Y/dist-packages (site-packages off Debian), left
#           out of a plain `cmake --install` because it writes into an interpreter's path.
include(GNUInstallDirs)

# Installed files keep the library folders outside the build tree that they link from (CUDA's),
# so they start wherever they are installed.
set_target_properties(taot-planner taotctl taot_greedy_plugin taot taot-sim taot-simranks taot_client_shared taot_python
                      PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)

install(TARGETS taot-planner taotctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
install(TARGETS taot_greedy_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/taot/plugins COMPONENT daemon)
install(FILES server/include/taot/planner_plugin.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taot COMPONENT daemon)
install(TARGETS taot taot-sim taot-simranks RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(TARGETS taot_client_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
        NAMELINK_COMPONENT client)
install(FILES client_lib/include/taot/client/taot_client.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taot/client
        COMPONENT client)

install(TARGETS taot_python LIBRARY DESTINATION ${TAOT_PYTHON_SITE_DIR}/taot COMPONENT python EXCLUDE_FROM_ALL)
list(TRANSFORM TAOT_PYTHON_PACKAGE_FILES PREPEND client_lib/ OUTPUT_VARIABLE python_files)
install(FILES ${python_files} DESTINATION ${TAOT_PYTHON_SITE_DIR}/taot COMPONENT python EXCLUDE_FROM_ALL)
