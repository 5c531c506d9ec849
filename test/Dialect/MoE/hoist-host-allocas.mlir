// RUN: moe-opt %s -moe-hoist-host-allocas | FileCheck %s

// A launch's argument slot inside a host loop moves to the entry block
// (with a copy of its count), so the loop reuses one slot; a slot of a
// run-time count and one already at entry stay where they are.

// CHECK-LABEL: llvm.func @loop(
// CHECK-SAME:    %[[N:.+]]: i64)
// CHECK-NEXT:    %[[C1:.+]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    %[[SLOT:.+]] = llvm.alloca %[[C1]] x !llvm.array<3 x ptr> : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[ONE:.+]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    %[[ENTRY:.+]] = llvm.alloca %[[ONE]] x i64 : (i64) -> !llvm.ptr
// CHECK:       ^bb1(%{{.+}}: i64):
// CHECK-NOT:     llvm.alloca %{{.+}} x !llvm.array<3 x ptr>
// CHECK:         llvm.store %{{.+}}, %[[SLOT]]
// CHECK:         llvm.alloca %[[N]] x f32
// CHECK:         llvm.return
llvm.func @loop(%n: i64) {
  %one = llvm.mlir.constant(1 : i64) : i64
  %entry = llvm.alloca %one x i64 : (i64) -> !llvm.ptr
  %zero = llvm.mlir.constant(0 : i64) : i64
  llvm.br ^bb1(%zero : i64)
^bb1(%i: i64):
  %c = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %c, ^bb2, ^bb3
^bb2:
  %slot = llvm.alloca %one x !llvm.array<3 x ptr> : (i64) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  llvm.store %null, %slot : !llvm.ptr, !llvm.ptr
  %dynamic = llvm.alloca %n x f32 : (i64) -> !llvm.ptr
  %next = llvm.add %i, %one : i64
  llvm.br ^bb1(%next : i64)
^bb3:
  llvm.return
}
