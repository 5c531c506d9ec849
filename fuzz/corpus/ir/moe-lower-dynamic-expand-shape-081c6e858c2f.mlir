func.func @unflatten(%a: memref<?x256xf32>, %b: index, %t: index) -> memref<?x?x256xf32> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%b, %t, 256]
      : memref<?x256xf32> into memref<?x?x256xf32>
  return %e : memref<?x?x256xf32>
}

func.func @strided(%a: memref<?xf32, strided<[?], offset: ?>>, %m: index, %n: index)
    -> memref<?x?xf32, strided<[?, ?], offset: ?>> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%m, %n]
      : memref<?xf32, strided<[?], offset: ?>> into memref<?x?xf32, strided<[?, ?], offset: ?>>
  return %e : memref<?x?xf32, strided<[?, ?], offset: ?>>
}

func.func @single_dynamic(%a: memref<?xf32>, %m: index) -> memref<?x4xf32> {
  %e = memref.expand_shape %a [[0, 1]] output_shape [%m, 4]
      : memref<?xf32> into memref<?x4xf32>
  return %e : memref<?x4xf32>
}
