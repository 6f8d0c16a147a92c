# Installation of the desktop integration and the sample trace, and the
# Debian package (CPack, DEB generator). docs/packaging.md explains it;
# packaging/check-deb.sh builds, installs and smoke-tests the package.
#
#   cmake --build build/x && (cd build/x && cpack -G DEB)
include(GNUInstallDirs)

set(BATCHPILOT_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)
set(BATCHPILOT_SAMPLE_TRACE ${PROJECT_SOURCE_DIR}/../shared/traces/azure_llm_conv_2023.csv
    CACHE FILEPATH "Sample trace installed to share/batchpilot/traces (empty: none)")

if(BATCHPILOT_CONSOLE)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/batchpilot.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/icons/batchpilot.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES ${BATCHPILOT_PACKAGING_DIR}/io.batchpilot.BatchPilot.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()
if(BATCHPILOT_SAMPLE_TRACE AND EXISTS ${BATCHPILOT_SAMPLE_TRACE})
  install(FILES ${BATCHPILOT_SAMPLE_TRACE} ${BATCHPILOT_PACKAGING_DIR}/traces/README
          DESTINATION ${CMAKE_INSTALL_DATADIR}/batchpilot/traces)
elseif(BATCHPILOT_SAMPLE_TRACE)
  message(WARNING "Sample trace ${BATCHPILOT_SAMPLE_TRACE} not found: the package will not include it")
endif()

set(CPACK_PACKAGE_NAME batchpilot)
set(CPACK_PACKAGE_VENDOR "The BatchPilot developers")
set(CPACK_PACKAGE_CONTACT "The BatchPilot developers <batchpilot@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Live batching console for transformer inference")
set(CPACK_PACKAGE_DESCRIPTION "BatchPilot batches inference requests in an embedded engine (libtorch) and \
lets an operator change batch size, queue delay and length buckets live while watching latency and \
throughput. Sessions are logged to SQLite, replayed under other settings and exported as reports. \
Includes batchpilot-bench.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # batchpilot_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})
# Library dependencies come from dpkg-shlibdeps (dpkg-dev); these are the
# run-time needs it cannot see: the OpenMP OpenBLAS that makes Debian's
# libtorch ~10x faster than the reference BLAS it would otherwise get
# (docs/benchmarks.md), Qt's platform plugins (xcb for the console,
# offscreen for `batchpilot report` and the tests) and the report's font.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp, qt6-qpa-plugins, fonts-dejavu-core")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "poppler-utils")
include(CPack)
