
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT, smCount INTEGER);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER, shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
  blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,
  copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER,
  bytes INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
  syncType INTEGER, eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
  uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUDA_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
  nameId INTEGER, returnValue INTEGER, nestingLevel INTEGER, callchainId INTEGER);
CREATE TABLE OSRT_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start INTEGER, cpu INTEGER,
  threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER);
CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER, symbol INTEGER, module INTEGER, stackDepth INTEGER,
  PRIMARY KEY (id, stackDepth));
CREATE TABLE SCHED_EVENTS (start INTEGER, cpu INTEGER, isSchedIn INTEGER, globalTid INTEGER);
CREATE TABLE PROFILER_OVERHEAD (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER,
  returnValue INTEGER);

INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'void gemm<float>(float*, int)'), (4, 'gemm'), (5, 'cuLaunchKernel'),
  (6, 'cudaStreamSynchronize_v3020'), (7, 'main'), (8, 'worker'), (9, 'cudaMemsetAsync_v3020'),
  (10, 'registered inner'), (11, 'unused thread'), (12, 'cudaMalloc'), (13, 'libcudart.so'),
  (14, 'app'), (15, '0x7f00dead'), (16, 'libcuda.so'), (17, 'cudaFree'), (18, 'write'),
  (19, 'libc.so.6'), (20, 'flush'), (21, 'sample_leaf'), (22, 'CUDA profiling initialization');
INSERT INTO PROCESSES VALUES ((1<<48)|(100<<24), 100, 'trainer'), ((1<<48)|(200<<24), 200, 'trainer'),
  ((1<<48)|(300<<24), 300, 'idle');
INSERT INTO ThreadNames VALUES (7, 10, (1<<48)|(100<<24)|101), (8, 10, (1<<48)|(200<<24)|201),
  (11, 10, (1<<48)|(300<<24)|301), (8, 10, (1<<48)|(100<<24)|103);
INSERT INTO TARGET_INFO_GPU VALUES (1<<48, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 132),
  (1<<48, 1, 'NVIDIA H100 80GB HBM3', '0000:2a:00.0', 132);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '2023-11-14T22:13:20', '');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1.113'),
  ('EXPORT_SCHEMA_VERSION', '3.13.2'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false');

INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES
  (-5000, NULL, 75, 'Domain A', (1<<48)|(100<<24)|101, 1),
  (-4000, NULL, 75, 'Domain B', (1<<48)|(200<<24)|201, 1),
  (-3000, NULL, 39, 'NVTX main', (1<<48)|(100<<24)|101, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, category, text, globalTid, domainId) VALUES
  (-2000, NULL, 33, 3, 'io', (1<<48)|(100<<24)|101, 1);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid, domainId, category, color, int64Value) VALUES
  (1000, 9000, 59, 'outer', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (2000, 3000, 59, NULL, 10, (1<<48)|(100<<24)|101, 1, 3, 4278255360, 42),
  (4000, 5000, 70, 'nvtxt range', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (8000, 9500, 59, 'crossing', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL),
  (9600, NULL, 59, 'never closed', NULL, (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL);
INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, globalTid, endGlobalTid, domainId) VALUES
  (1500, 7000, 60, 1, 'async 1', (1<<48)|(100<<24)|101, (1<<48)|(100<<24)|102, 1),
  (6000, 8000, 60, 2, 'async 2', (1<<48)|(100<<24)|101, (1<<48)|(100<<24)|101, 1),
  (3000, 3500, 71, 3, 'nvtxt async', (1<<48)|(100<<24)|102, NULL, 0),
  (1000, 2000, 60, 1, 'async B', (1<<48)|(200<<24)|201, NULL, 1);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, uint64Value, doubleValue, jsonText) VALUES
  (4500, NULL, 34, 'checkpoint', (1<<48)|(100<<24)|101, 1, -1, NULL, NULL),
  (4600, NULL, 34, 'loss', (1<<48)|(100<<24)|101, 0, NULL, 2.5, NULL),
  (4700, NULL, 34, 'config', (1<<48)|(100<<24)|101, 0, NULL, NULL, '{"lr":0.1}'),
  (4800, NULL, 99, 'future type', (1<<48)|(100<<24)|101, 0, NULL, NULL, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (2100, 2200, 0, (1<<48)|(100<<24)|101, 10, 1, 0, NULL),
  (2300, 2400, 0, (1<<48)|(100<<24)|101, 11, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (3000, 4000, 0, 1, 7, 10, (1<<48)|(100<<24), 3, 4, 1, 1, 1, 1, 1, 1, 8),
  (4100, 6000, 0, 1, 7, 11, (1<<48)|(100<<24), 4, 4, 1, 1, 1, 1, 1, 1, 8);
