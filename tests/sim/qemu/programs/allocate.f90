! Fortran arrays on the heap: two ALLOCATE statements, each array written and summed once.
program allocate_arrays
  implicit none
  real(8), allocatable :: a(:), b(:)
  integer :: i
  allocate(a(10000)) ! site: a
  allocate(b(20000)) ! site: b
  do i = 1, 10000
    a(i) = i
  end do
  do i = 1, 20000
    b(i) = 1.0d0
  end do
  print *, sum(a) + sum(b)
  deallocate(a, b)
end program allocate_arrays
