"""What serving costs: the roofline (`roofline`), the capacity calculator (`capacity`) and the
planners that read results (`planning`)."""
