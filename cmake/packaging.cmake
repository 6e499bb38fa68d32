# Debian packages (CPack's DEB generator): cmax-coordinator (the daemon and
# cmaxctl), cmax-agent, cmax-bench and, where CUDA is found, cmax-bench-cuda.
#   cmake --build build && (cd build && cpack -G DEB)   -> build/cmax-*_<version>_<arch>.deb
# Dependencies come from dpkg-shlibdeps (the shared libraries the binaries
# link) plus the programs the suites run. The maintainer scripts in
# deploy/debian/ make the `cmax` user, the state directories and /etc/cmax;
# the systemd units are installed, never enabled. Tested by
# tests/deploy/deb_test.sh (lintian, install, systemd-analyze verify, purge).
include(GNUInstallDirs)

# The package version: the project's, plus the commit's place in history
# where the tree is a git checkout (0.1.0+git412.g1a2b3c4), so a package
# built from a later commit upgrades one built from an earlier one (dpkg
# compares 412 after '+git'); a tree without git packages as 0.1.0.
set(CMAX_PACKAGE_VERSION ${PROJECT_VERSION})
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-list --count HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _git_count
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _git_rc1)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=7 HEAD
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _git_hash
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _git_rc2)
  if(_git_rc1 EQUAL 0 AND _git_rc2 EQUAL 0 AND _git_count MATCHES "^[0-9]+$")
    set(CMAX_PACKAGE_VERSION "${PROJECT_VERSION}+git${_git_count}.g${_git_hash}")
  endif()
endif()


# The units as packaged: binaries in /usr/bin, the README (and the docs/ pages
# its map links, beside it as in the tree) in the package's doc.
foreach(unit cmax-coordinator cmax-agent)
  file(READ ${PROJECT_SOURCE_DIR}/deploy/systemd/${unit}.service _unit)
  string(REPLACE "file:///usr/local/share/doc/cmax/README.md"
                 "file:///usr/share/doc/${unit}/README.md" _unit "${_unit}")
  # Every /usr/local path a unit names (binaries, --bench-dir, data) is under
  # /usr in the packages; the layout is checked on booted hosts by
  # tests/deploy/cluster/cluster_test.sh.
  string(REPLACE "/usr/local/" "/usr/" _unit "${_unit}")
  string(REPLACE "installed by deploy/install.sh" "made by the ${unit} package" _unit "${_unit}")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/${unit}.service "${_unit}")
endforeach()

# Debian wants a changelog and a copyright file in every package's doc dir.
set(_changelog "cmax (${CMAX_PACKAGE_VERSION}) unstable; urgency=medium\n\n  * Packaged by CPack from the cmax tree.\n\n -- cmax developers <cmax@users.noreply.github.com>  Tue, 01 Dec 2026 00:00:00 +0000\n")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/changelog "${_changelog}")
find_program(CMAX_GZIP gzip REQUIRED)
execute_process(COMMAND ${CMAX_GZIP} -9nf ${CMAKE_BINARY_DIR}/packaging/changelog)

set(_components coordinator agent bench)
if(TARGET cmax-bench-cuda)
  list(APPEND _components bench-cuda)
endif()
foreach(c ${_components})
  install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
                ${CMAKE_BINARY_DIR}/packaging/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DOCDIR}/../cmax-${c} COMPONENT ${c})
endforeach()

file(GLOB _cmax_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(TARGETS cmax-coordinator cmaxctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT coordinator)
install(FILES ${CMAKE_BINARY_DIR}/packaging/cmax-coordinator.service
        DESTINATION lib/systemd/system COMPONENT coordinator)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/../cmax-coordinator
        COMPONENT coordinator)
install(FILES ${_cmax_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/../cmax-coordinator/docs
        COMPONENT coordinator)
install(TARGETS cmax-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
install(FILES ${CMAKE_BINARY_DIR}/packaging/cmax-agent.service
        DESTINATION lib/systemd/system COMPONENT agent)
# The agent's env file as deploy/install.sh and the node tarball write it
# (the watch's defaults with it): the package's postinst copies it to
# /etc/cmax/agent.env when there is none.
file(READ ${PROJECT_SOURCE_DIR}/deploy/systemd/agent.env _agent_env)
# The packages install under /usr (CPACK_PACKAGING_INSTALL_PREFIX below).
string(REPLACE "@SHARE@" "/usr/share/cmax" _agent_env "${_agent_env}")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/agent.env "${_agent_env}")
install(FILES ${CMAKE_BINARY_DIR}/packaging/agent.env
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cmax-agent COMPONENT agent)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/../cmax-agent
        COMPONENT agent)
install(FILES ${_cmax_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/../cmax-agent/docs
        COMPONENT agent)
# cmax-watch, the passive watch the agent runs between runs, beside cmax-bench.
install(TARGETS cmax-bench cmax-watch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bench)
# Slurm: the HealthCheckProgram beside cmax-bench, the job script with the plans.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/deploy/slurm/cmax-healthcheck
        DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bench)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/deploy/slurm/cmax-eval.sbatch
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cmax/slurm COMPONENT coordinator)
file(GLOB _plans ${PROJECT_SOURCE_DIR}/benchmarks/plans/*.yaml)
install(FILES ${_plans} DESTINATION ${CMAKE_INSTALL_DATADIR}/cmax/plans COMPONENT bench)
file(GLOB _data_dirs LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/benchmarks/*/data)
foreach(d ${_data_dirs})
  install(DIRECTORY ${d}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/cmax COMPONENT bench)
endforeach()
# The workload suite's training script, where cmax-bench looks for it
# (../share/cmax/workload from its own directory).
install(FILES ${PROJECT_SOURCE_DIR}/benchmarks/workload/train.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cmax/workload COMPONENT bench)
if(TARGET cmax-bench-cuda)
  install(TARGETS cmax-bench-cuda RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bench-cuda)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cmax)
set(CPACK_PACKAGE_VERSION ${CMAX_PACKAGE_VERSION})
set(CPACK_PACKAGE_CONTACT "cmax developers <cmax@users.noreply.github.com>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME cmax-coordinator)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_DEPENDS "adduser")
set(CPACK_COMPONENT_COORDINATOR_DESCRIPTION
    "GPU cluster evaluation: the coordinator daemon and cmaxctl\nSchedules cmax evaluation suites onto the agents, stores their results in\nSQLite and writes the ClusterMAX-style scorecard (HTML, Markdown, JSON).")
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/coordinator/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/coordinator/postrm)

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME cmax-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "cmax-bench (= ${CMAX_PACKAGE_VERSION})")
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "GPU cluster evaluation: the node agent\nRuns cmax's evaluation suites on this node for the coordinator, as child\nprocesses with validated arguments, and streams their records back.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/agent/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/agent/postrm)

set(CPACK_DEBIAN_BENCH_PACKAGE_NAME cmax-bench)
set(CPACK_DEBIAN_BENCH_PACKAGE_RECOMMENDS "fio, openmpi-bin, perftest, iproute2, pciutils")
set(CPACK_COMPONENT_BENCH_DESCRIPTION
    "GPU cluster evaluation: the host suites (cmax-bench)\nHostcheck, health, audit, storage (fio), connectivity, host collectives,\nCPU GEMM and burn-in, consistency and DCGM, with the plans and data files.")

set(CPACK_DEBIAN_BENCH-CUDA_PACKAGE_NAME cmax-bench-cuda)
set(CPACK_DEBIAN_BENCH-CUDA_PACKAGE_DEPENDS "cmax-bench (= ${CMAX_PACKAGE_VERSION})")
set(CPACK_COMPONENT_BENCH-CUDA_DESCRIPTION
    "GPU cluster evaluation: the GPU suites (cmax-bench-cuda)\nGEMM through cuBLASLt, memory and PCIe copies, burn-in, consistency and NCCL\ncollectives. cuBLASLt and NCCL are loaded at run time from the node's CUDA.")

include(CPack)
